/**
 * The port of `once`: a first-time gate per `(kind, subject)`, written in the caller's
 * transaction. `onceTableContract` in `idem/testing` checks it.
 *
 * - `mark` records the pair in `tx` unless it is there, and says whether it recorded it
 *   now. A rollback of `tx` forgets the mark, so the next attempt gets true again.
 * - A concurrent transaction marking the same pair waits until the first ends: then it
 *   gets false (the first committed) or true (the first rolled back).
 * - Two transactions that each hold a mark the other asks for (crossed marks) do not
 *   wait for ever: within a bounded time one of the marks throws (a deadlock error, a
 *   bounded wait's `StoreUnavailableError`), so that transaction rolls back and the
 *   other commits.
 * - Marks are kept until deleted.
 */
export interface OnceTable<Tx, Marked extends boolean | Promise<boolean> = Promise<boolean>> {
  /** Records `(kind, subject)` in `tx` unless it is there; true when this call recorded it. */
  mark(tx: Tx, kind: string, subject: string): Marked
}

/** What a store that serves `once` has. */
export interface WithOnceTable<Tx, Marked extends boolean | Promise<boolean> = Promise<boolean>> {
  readonly name: string
  readonly once: OnceTable<Tx, Marked>
}
