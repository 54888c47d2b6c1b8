/**
 * What `idem inspect` shows of one key, the same shape from every store that keeps keys
 * (Postgres, SQLite, Redis), read without taking any lock.
 */
export interface KeyInspection {
  scope: string
  key: string
  /** Now, by the store's clock (ISO 8601). */
  now: string
  /** The transactional record (`idem_keys`), if any. */
  record?: {
    fingerprint: string
    createdAt: string
    expiresAt: string
    expired: boolean
    /** The stored HTTP status, for outcomes the HTTP middleware stored. */
    status: number | null
    outcomeBytes: number
  }
  /** The leased claim, if any. */
  lease?: {
    state: 'held' | 'free' | 'completed'
    fingerprint: string
    /** The fencing token of the current (or last) holder. */
    token: string
    leaseUntil: string | null
    /** True while a holder's lease runs. */
    leaseLive: boolean
    /** Null where the store cannot tell (a Redis key without a TTL). */
    expiresAt: string | null
    expired: boolean
    status: number | null
    /** `savedAt` and `token` are null where the store keeps no time or token per step (Redis). */
    steps: { name: string; savedAt: string | null; token: string | null }[]
  }
}

/** The stored status of an HTTP outcome (`{"status":201,…}`), read from its first bytes. */
export function statusOf(outcome: string | null | undefined): number | null {
  const match = outcome == null ? null : /^\{"status":(\d{3})[,}]/.exec(outcome)
  return match ? Number(match[1]) : null
}
