/** Where the command writes: the console by default, a buffer in tests. */
export interface CliIo {
  out(line: string): void
  err(line: string): void
}

/** Exit codes, so schedulers and CI can tell an alert from a mistake. */
export const EXIT = { ok: 0, exceeded: 1, usage: 2 } as const
