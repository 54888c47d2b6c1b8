/**
 * The contract between the transactional engine and a key store: the `KeyStore` port.
 * A store does I/O only; every decision (replay, mismatch, in flight, expiry as "new")
 * is the engine's. `keyStoreContract` in `idem/testing` checks it.
 *
 * A store keeps, per `(scope, key)`, one record: the request's fingerprint and the
 * serialised outcome, with an expiry. The record is written in the same transaction
 * as the caller's effects, so "the effect happened" and "the key is recorded" can
 * never disagree.
 *
 * Durations are integer milliseconds.
 */
export interface KeyStore<Tx> {
  /** A short name for logs and errors (`postgres`, `sqlite`, `memory`). */
  readonly name: string

  /**
   * The largest outcome the store holds: the UTF-8 size, in bytes, of a record's
   * `outcome` text that `commit` stores and `begin` reads back whole. Declare what the
   * backend really holds, never more (`keyStoreContract` stores and replays an outcome of
   * exactly this size), and at least `MIN_MAX_OUTCOME_BYTES` (1 KiB). The engine never
   * commits a larger outcome: it rolls the call back with `OutcomeTooLargeError`, so
   * "not stored" never means "run again" behind the front end's answer. Front ends size
   * what they store by it (a bound on stored bodies, say). The bundled stores declare
   * 16 MiB.
   */
  readonly maxOutcomeBytes: number

  /**
   * Opens a transaction (or joins `request.tx`, the caller's open transaction), takes
   * the key's lock, and reads the key's live record. Must be atomic with respect to
   * other `begin` calls for the same `(scope, key)`: while one session holds the lock
   * and has not ended, another `begin` for that key waits up to `waitMs` and then
   * returns `locked` (with `waitMs <= 0` it returns `locked` at once).
   *
   * A record whose expiry has passed is not live: the claim is `new`.
   *
   * @throws StoreUnavailableError when the backend cannot be reached
   * @throws MigrationRequiredError when the store's tables are missing
   */
  begin(request: BeginRequest<Tx>): Promise<Session<Tx>>
}

/**
 * What the engine asks `KeyStore.begin` for: the key, how long to wait for its holder,
 * and a transaction to join.
 */
export interface BeginRequest<Tx> {
  scope: string
  key: string
  /** How long to wait for another holder of the same key. */
  waitMs: number
  /** The caller's open transaction to join; when absent the store opens its own. */
  tx?: Tx | undefined
}

/** What `begin` found. */
export type Claim =
  /** No live record; this session holds the key's lock. */
  | { readonly state: 'new' }
  /** A committed, live record. */
  | { readonly state: 'found'; readonly record: KeyRecord }
  /** Another session held the key's lock for longer than `waitMs`. */
  | { readonly state: 'locked' }
  /**
   * The lock was obtained after waiting, but the transaction's snapshot predates the
   * holder's commit (REPEATABLE READ or SERIALIZABLE), so the record cannot be seen.
   * The engine retries in a fresh transaction, or reports the key in flight.
   */
  | { readonly state: 'stale' }

/** A stored outcome and the fingerprint of the request that made it. */
export interface KeyRecord {
  readonly fingerprint: string
  /** The outcome as serialised by the engine (JSON text); one to commit is at most the store's `maxOutcomeBytes`. */
  readonly outcome: string
}

/** A record to commit, with how long to keep it. */
export interface NewRecord extends KeyRecord {
  /** Retention from now. */
  readonly ttlMs: number
}

/** One transaction holding one key's lock. Exactly one of `commit` or `rollback` ends it. */
export interface Session<Tx> {
  /** The transaction the caller's function writes its effects through. */
  readonly tx: Tx
  readonly claim: Claim
  /** True when the session joined the caller's transaction rather than opening one. */
  readonly joined: boolean
  /**
   * Writes the record (replacing an expired one) and commits, atomically with every
   * effect written through `tx`. In a joined transaction it only writes; the caller
   * commits. On failure the transaction is rolled back (if owned) before throwing.
   */
  commit(record: NewRecord): Promise<void>
  /** Ends the session writing nothing: rolls back an owned transaction. Never throws. */
  rollback(): Promise<void>
  /**
   * Ends an owned session at once, while the caller's function may still be running
   * with `tx` (its deadline passed, see `deadlineMs`): rolls the transaction back
   * without waiting for the function (a statement of its still running is cancelled),
   * frees the key for the next `begin`, and makes every later write through `tx` fail
   * rather than commit or land in another transaction. Resolves once the transaction is
   * over, or once waiting for the backend stopped making sense; never throws. A store
   * that cannot fence `tx` off from such late writes (one connection shared by every
   * transaction, as SQLite's) leaves it out: the engine then keeps the session until
   * the function ends, and warns at the deadline (`overran-held`). Joined sessions
   * leave it out: the caller owns their transaction.
   */
  abandon?(): Promise<void>
  /**
   * Why the session's transaction was lost while the call ran (its connection died),
   * once it was: the error the call fails with, whatever the function threw or returned,
   * since nothing was committed and the retry is safe. A store whose transactions
   * cannot be lost under the caller leaves it out.
   */
  lost?(): Error | undefined
}

/**
 * The least `maxOutcomeBytes` a store may declare (1 KiB): room for the record a leased
 * call leaves when its outcome is too large to keep (`oversizedOutcome`).
 */
export const MIN_MAX_OUTCOME_BYTES = 1024

/**
 * One string for a `(scope, key)` pair, for in-process maps and locks. Length-prefixing
 * keeps ("ab", "c") and ("a", "bc") apart.
 */
export function keyId(scope: string, key: string): string {
  return `${scope.length}:${scope}${key}`
}
