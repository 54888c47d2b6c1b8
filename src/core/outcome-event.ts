/** One engine call's outcome, for metrics and logs. */
export type OutcomeKind =
  | 'fresh'
  | 'replayed'
  | 'not-stored'
  | 'in-flight'
  | 'mismatch'
  /** Leased engine: the holder lost its lease (another call took the key over, or renewals failed); nothing more was written under it. */
  | 'lease-lost'
  | 'error'

export interface OutcomeEvent {
  kind: OutcomeKind
  scope: string
  /** The store's name. */
  store: string
  /** Milliseconds from the call to its outcome. */
  durationMs: number
  error?: unknown
}

/**
 * Reports each call's outcome to the user's hook, timing it from `started`
 * (`performance.now()`). A throwing hook is ignored: metrics must never change a
 * request's outcome.
 */
export function outcomeReporter(onOutcome: ((event: OutcomeEvent) => void) | undefined, store: string) {
  return function report(kind: OutcomeKind, scope: string, started: number, error?: unknown): void {
    if (onOutcome === undefined) return
    try {
      onOutcome({ kind, scope, store, durationMs: performance.now() - started, error })
    } catch {
      // ignored on purpose, see above
    }
  }
}
