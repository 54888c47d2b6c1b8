/**
 * Where dead letters are read back: messages the inbox gave up on and effects the
 * outbox could not deliver. (They are written by the inbox's and the outbox's own
 * tables, in the transactions that give up on them.) `deadLetterTableContract`-style
 * cases in `idem/testing` check it through the inbox and the outbox.
 */
export interface DeadLetterTable {
  /** Dead letters of one source (and name, when given), newest first, at most `limit`. */
  list(query: { source: 'inbox' | 'outbox'; name: string | null; limit: number }): Promise<DeadLetterRow[]>
}

/** One dead letter. */
export interface DeadLetterRow {
  id: string
  /** `inbox` (a consumed message) or `outbox` (an effect that could not be delivered). */
  source: 'inbox' | 'outbox'
  /** The consumer (inbox) or the topic (outbox). */
  name: string
  /** The inbox key or the outbox dedupe key. */
  messageKey: string
  payload: unknown
  attempts: number
  lastError: string
  firstSeenAt: Date
  deadAt: Date
}

/** What a store that keeps dead letters has. */
export interface WithDeadLetterTable {
  readonly name: string
  readonly deadLetters: DeadLetterTable
}
