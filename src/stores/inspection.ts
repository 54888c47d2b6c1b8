/** The stored status of an HTTP outcome (`{"status":201,…}`), read from its first bytes. */
export function statusOf(outcome: string | null | undefined): number | null {
  const match = outcome == null ? null : /^\{"status":(\d{3})[,}]/.exec(outcome)
  return match ? Number(match[1]) : null
}
