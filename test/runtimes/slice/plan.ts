// The slice of the test suite that runs under Bun and Deno (test/runtimes/slice/main.ts),
// group by group. Imports nothing, so the Node test that starts the slice knows what to
// expect from it without loading what it runs.

/** The conformance table's backends in the slice: the runtime's own SQLite, Postgres, Redis (leased). */
export const SLICE_BACKENDS = ['sqlite', 'postgres', 'redis'] as const
/** The Web-standard front ends. */
export const SLICE_FRONT_ENDS = ['fetch', 'hono'] as const

/** A conformance group's name. */
export function conformanceGroup(frontEnd: (typeof SLICE_FRONT_ENDS)[number], backend: (typeof SLICE_BACKENDS)[number]): string {
  return `conformance: ${frontEnd} × ${backend}`
}

/** Every group of the slice, in the order it runs. */
export const SLICE_GROUPS: readonly string[] = [
  ...SLICE_BACKENDS.flatMap((backend) => SLICE_FRONT_ENDS.map((frontEnd) => conformanceGroup(frontEnd, backend))),
  'contract: SQLite (the runtime’s own) keys, inbox, outbox, once',
  'contract: SQLite (the runtime’s own) leased store',
  'contract: memory store, transactional and leased',
  'leased: a worker killed between two steps; the retry resumes at step 2',
  'client: 200 orders through lost responses, each applied once',
  'sqlite: openSqlite opens the runtime’s own; a closed connection is unavailable at once',
  'data: content ids, upserts, once, memo, reconcile and encryption on the runtime’s SQLite',
]

/** The line prefix the slice reports on: `IDEM-SLICE <json>`. */
export const REPORT_PREFIX = 'IDEM-SLICE '

/** One line of the slice's report. */
export type SliceReport =
  | { group: string; planned: number }
  | { group: string; skipped: string }
  | { group: string; case: string; ok: true; ms: number }
  | { group: string; case: string; ok: false; error: string }
  | { done: true }
