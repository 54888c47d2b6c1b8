import type { KeyRecord } from './key-store.js'

/**
 * What a store says about a key without claiming it: the port a store implements to be
 * consulted during a move to another store (`dualReadStore`, `dualReadKeyStore`).
 *
 * - `completed`: a live stored outcome.
 * - `held`: a call is running on the key right now (a lock or a live lease), or left
 *   steps to resume: it must not start anywhere else.
 * - `absent`: nothing live (never seen, expired, or released with nothing to resume).
 *
 * A peek must see a holder that holds the key when the peek begins, and the outcome of
 * one that finished before it (Postgres: the key's advisory lock is tried first, then
 * the record read in a new snapshot; Redis and DynamoDB: one consistent read).
 */
export interface KeyPeek {
  readonly name: string
  /** What the store holds for `(scope, key)` right now, read without claiming it (see above). */
  peek(scope: string, key: string): Promise<PeekResult>
}

/** What a store holds for a key, read without claiming it: a completed outcome, a live holder, or nothing. */
export type PeekResult = { readonly state: 'completed'; readonly record: KeyRecord } | { readonly state: 'held' } | { readonly state: 'absent' }
