import type { TaskMeta } from 'vitest'

/**
 * One row of the chaos table: what a scenario did and what it found. The invariants are
 * the columns: every row must show 0 duplicates, 0 lost, 0 unexpected 5xx and 0
 * unexpected crashes, or `npm run chaos` fails (each scenario also asserts them).
 */
export interface ChaosRow {
  scenario: string
  /** Runs of the scenario: kills, intents, cases, states explored… (`unit` says which). */
  runs: number
  unit?: string
  duplicates: number
  lost: number
  /** 5xx answers no fault excuses (a 503 with Retry-After during an outage is expected). */
  unexpected5xx: number
  /** Server processes that died of something other than the test's own kill. */
  crashes?: number
  /** The longest time from the end of a fault to the first intent that succeeded after it. */
  maxRecoveryMs?: number | undefined
  notes?: string
}

declare module 'vitest' {
  interface TaskMeta {
    chaos?: ChaosRow[]
  }
}

/** Adds a row to the table the chaos reporter prints (`test/chaos/reporter.ts`). */
export function report(task: { meta: TaskMeta }, row: ChaosRow): void {
  ;(task.meta.chaos ??= []).push(row)
}

/** True in `npm run chaos`; `npm test` runs the reduced version. */
export const FULL = process.env.IDEM_CHAOS === 'full'

/** The reduced count in `npm test`, the full one in `npm run chaos`. */
export function scale(reduced: number, full: number): number {
  return FULL ? full : reduced
}

/** True when the row breaks an invariant. */
export function violates(row: ChaosRow): boolean {
  return row.duplicates > 0 || row.lost > 0 || row.unexpected5xx > 0 || (row.crashes ?? 0) > 0
}
