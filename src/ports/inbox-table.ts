/**
 * The inbox's port: what `createInbox` needs of a store, and nothing more. This comment
 * is the specification; `inboxTableContract` in `idem/testing` checks it. A store that
 * keeps its data in a database implements it next to its keys (`postgresStore(…).inbox`,
 * `sqliteStore(…).inbox`, `memoryStore().inbox`), and is the only place that knows its
 * SQL; the inbox holds every decision (duplicate, retry, dead letter).
 *
 * Per `(consumer, key)` a table keeps whether the message was processed (until an
 * expiry), how many attempts at it failed (with the last error), and its dead letter,
 * if it became one.
 *
 * Rules every table follows:
 * - **One transaction per delivery.** `begin` opens a transaction and claims the
 *   message id in it; the handler writes its effects through `session.tx`; `commit`
 *   records the id with them, atomically, so "the effect happened" and "the message is
 *   known as processed" never disagree. `rollback` forgets both.
 * - **Mutual exclusion.** While one session holds `(consumer, key)`, another `begin`
 *   for it waits up to `waitMs`, then reports `in-flight` (at once with `waitMs <= 0`),
 *   or `processed` if the holder committed meanwhile.
 * - **Expiry.** An id recorded more than its `retentionMs` ago is forgotten: a new
 *   delivery of it is `new`.
 * - **Failures** are counted outside the handler's transaction (it rolled back), each
 *   count atomic against the others.
 * - **Failures.** A backend that cannot be reached throws `StoreUnavailableError`;
 *   missing tables throw `MigrationRequiredError`.
 */
export interface InboxTable<Tx> {
  /**
   * Opens a transaction and claims the message in it.
   * @throws StoreUnavailableError / MigrationRequiredError; nothing was claimed
   */
  begin(request: InboxClaim): Promise<InboxSession<Tx>>
  /**
   * Counts one failed attempt at a message, in a short transaction of its own, and
   * keeps `error` as its last error.
   * @returns the failed attempts counted so far, this one included
   */
  recordFailure(consumer: string, key: string, error: string): Promise<number>
}

/** What `begin` claims. */
export interface InboxClaim {
  /** The consumer's name: ids of different consumers never meet. */
  readonly consumer: string
  /** The message's key (`messageKey` of its id): 1–255 visible ASCII. */
  readonly key: string
  /** How long to wait for another delivery of the same message being processed. */
  readonly waitMs: number
  /** How long a processed id is remembered after `commit`. */
  readonly retentionMs: number
}

/** One delivery's transaction. Exactly one of `commit` or `rollback` ends a `new` one; the others are ended already. */
export interface InboxSession<Tx> {
  /**
   * - `new`: not processed before; this session holds the claim.
   * - `processed`: recorded as processed (or dead-lettered) and not expired.
   * - `in-flight`: another session held the claim for longer than `waitMs`.
   * - `stale`: the claim came after waiting, but the transaction's snapshot predates the
   *   holder's commit (an isolation level stricter than READ COMMITTED): begin again.
   */
  readonly state: 'new' | 'processed' | 'in-flight' | 'stale'
  /** The transaction the handler writes its effects through (for a `new` session). */
  readonly tx: Tx
  /** Reads and removes the message's failure count; the removal holds only if the session commits. */
  takeFailures(): Promise<PriorFailures | undefined>
  /** Keeps the message as a dead letter, in this transaction. */
  deadLetter(letter: InboxDeadLetter): Promise<void>
  /** Records the id as processed (for `retentionMs`) and commits, with every effect written through `tx`. */
  commit(): Promise<void>
  /** Ends the session writing nothing. Never throws. */
  rollback(): Promise<void>
  /**
   * Ends a `new` session at once, while the handler may still be running with `tx` (its
   * deadline passed): as `rollback`, without waiting for the handler, and so that every
   * later write through `tx` fails or is never committed. Never throws. A table that
   * cannot fence `tx` off from the handler's late writes leaves it out: the inbox then
   * keeps the session until the handler ends (see `Session.abandon`).
   */
  abandon?(): Promise<void>
  /** Why the transaction was lost while the handler ran (its connection died), once it was. */
  lost?(): Error | undefined
}

/** What earlier attempts at a message left behind. */
export interface PriorFailures {
  attempts: number
  lastError: string
  firstFailedAt: Date
}

/** A message given up on. */
export interface InboxDeadLetter {
  /** JSON text of the message body. */
  payload: string
  attempts: number
  error: string
  /** When the message first failed, if it did. */
  firstSeenAt: Date | undefined
}

/** What a store that serves the inbox has. */
export interface WithInboxTable<Tx> {
  readonly name: string
  readonly inbox: InboxTable<Tx>
}
