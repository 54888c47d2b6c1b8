import type { KeyRecord } from './key-store.js'

/**
 * The contract between the leased engine and a leased key store. This comment is the
 * specification; `leasedStoreContract` in `idem/testing` checks it.
 *
 * Leased mode is for work whose effects live outside the store (a payment provider,
 * an email API, an LLM), so no transaction can tie "the effect happened" to "the key is
 * recorded". Instead a call **claims** the key with a **lease** (a time limit the
 * holder keeps renewing); it checkpoints **steps** and finally **completes** with its
 * outcome. A claim that acquires the key hands back a `Lease`, the one handle every
 * later write of that call goes through, and each of them is compare-and-set on that
 * claim, so a holder that was paused past its lease and replaced by a retry changes
 * nothing when it wakes.
 *
 * Per `(scope, key)` a store keeps one claim record — fingerprint, state (`held`,
 * `free` or `completed`), which claim holds it, lease expiry, outcome and retention —
 * and the key's steps, `name → result`. A store does I/O only; every decision about
 * replays, mismatches and waiting is the engine's.
 *
 * Rules every store follows:
 * - **Atomic transitions.** `claim` and each method of a `Lease` are one atomic step
 *   against every other call for the same key, from any process.
 * - **Fencing.** A `Lease`'s methods change the key only while that claim is the
 *   key's latest and the key is `held`; once another claim took the key over, or this
 *   one completed or released it, each changes nothing and returns `false`. A lease
 *   that ran out but that nobody took over still belongs to its holder while the key is
 *   kept (see retention): the claim, not the clock, decides.
 * - **Fencing tokens.** `Lease.fencingToken()` gives a safe integer
 *   (`Number.isSafeInteger`) greater than the fencing token of every earlier claim of
 *   the key, also after a release, a takeover or the key's expiry, and the same on
 *   every call on one lease: what storage outside idem checks to refuse a replaced
 *   holder. The bundled stores seed it from the store's clock in microseconds.
 * - **Steps are bound to the request.** While a key has steps, only a claim with the
 *   same fingerprint may take it; others see it `running` (the engine refuses them as a
 *   mismatch). Steps from an earlier lifetime of the key (its retention ran out) are gone.
 * - **Retention.** A key with steps (held, or released) is kept for at least
 *   `leaseMs + ttlMs` after its last claim and never expires while its lease is live; a
 *   held key without steps needs to live only until its lease ends (it has nothing to
 *   resume: an expired plain claim is a free key); a completed key is kept for `ttlMs`
 *   after `complete`. An expired key is a new key.
 * - **Time** is the store's own clock (Redis `TIME`, Postgres `clock_timestamp()`),
 *   never the caller's. Durations are integer milliseconds.
 * - **Failures.** A backend that cannot be reached or does not answer in time throws
 *   (or rejects with) `StoreUnavailableError`; missing tables `MigrationRequiredError`.
 */
export interface LeasedStore {
  /** A short name for logs and errors (`redis`, `postgres`, `sqlite`, `dynamodb`, `memory`). */
  readonly name: string

  /**
   * The largest outcome, and the largest step result, the store holds: the UTF-8 size,
   * in bytes, of the text `complete` and `saveStep` store and `claim` reads back whole.
   * Declare what the backend really holds, never more (`leasedStoreContract` stores and
   * reads back an outcome and a step of exactly this size), and at least
   * `MIN_MAX_OUTCOME_BYTES` (1 KiB). The engine never hands a store a larger one: a call
   * whose outcome (or a step result) is larger has run, so it completes the key with a
   * small record that every retry answers with `OutcomeTooLargeError`, and nothing runs
   * again. Front ends size what they store by it (the HTTP middleware's
   * `maxStoredBodyBytes`). The bundled stores declare 16 MiB, DynamoDB 3.75 MiB.
   */
  readonly maxOutcomeBytes: number

  /**
   * Claims `(scope, key)` for a call identified by `fingerprint`, atomically:
   * - a live completed record → `completed` with it (whatever the fingerprint);
   * - a live lease held by another call → `running` with that call's fingerprint;
   * - a key whose lease ran out or was released, and whose steps (if any) were saved
   *   under the same fingerprint → `acquired` with a new `Lease` and those steps: the
   *   caller resumes after the last completed step;
   * - the same, but with steps saved under another fingerprint → `running` with that
   *   fingerprint (only that request may resume them);
   * - no live record → `acquired` with a new `Lease` and no steps.
   * An acquired claim's lease runs for `leaseMs` from now.
   *
   * @param leaseMs how long the claim holds without renewal (≥ 1)
   * @param ttlMs how long an unfinished key with steps is kept after this claim, beyond its lease
   */
  claim(scope: string, key: string, fingerprint: string, leaseMs: number, ttlMs: number): Promise<LeaseClaim>
}

/**
 * One claim's hold on a key. Every method is compare-and-set on THIS claim: once another
 * claim took the key over (or this one completed or released it), each changes nothing
 * and returns `false` (`fencingToken`: `undefined`). Made by the store, once per claim,
 * holding what its methods need (the key's names, the claim's identity); the engine
 * never builds one.
 */
export interface Lease {
  /**
   * Extends the lease to `leaseMs` from now. Also succeeds when the lease ran out and
   * nobody took over.
   * @returns false (changing nothing) when this claim no longer holds the key
   */
  renew(leaseMs: number): Promise<boolean>

  /**
   * Records a step's result under `name`, durably, before returning, so it survives the
   * holder's crash and anything the holder rolls back later.
   * @param result the step's result as serialised by the engine (JSON text), at most `maxOutcomeBytes`
   * @returns false (changing nothing) when this claim no longer holds the key
   */
  saveStep(name: string, result: string): Promise<boolean>

  /**
   * Stores the outcome and ends the claim: the key is `completed` for `ttlMs` from now
   * and every later claim gets the record. Its steps are no longer needed and may be
   * dropped.
   * @param outcome the outcome as serialised by the engine (JSON text), at most `maxOutcomeBytes`
   * @returns false (changing nothing) when this claim no longer holds the key
   */
  complete(outcome: string, ttlMs: number): Promise<boolean>

  /**
   * Ends the lease without an outcome, so the next claim need not wait for it to run
   * out. The key's steps stay (bound to its fingerprint), so a retry of the same
   * request resumes at once; a key without steps is free for any request.
   * @returns false (changing nothing) when this claim no longer holds the key
   */
  release(): Promise<boolean>

  /**
   * A fencing token for storage outside idem: a safe integer greater than that of every
   * earlier claim of the key, the same for every call on this lease; `undefined` when
   * this lease no longer holds the key. Asked only when a user reads it (rare): a store
   * may need a round trip for it.
   */
  fencingToken(): Promise<number | undefined>
}

/** What `claim` found. */
export type LeaseClaim =
  /** This call holds the key through `lease`; `steps` are results saved by earlier holders. */
  | { readonly state: 'acquired'; readonly lease: Lease; readonly steps: ReadonlyMap<string, string> }
  /** The key holds a live, completed record. */
  | { readonly state: 'completed'; readonly record: KeyRecord }
  /**
   * Another call holds the key (or holds resumable steps of it): `fingerprint` is that
   * call's, so a different request is a mismatch even while the first still runs.
   */
  | { readonly state: 'running'; readonly fingerprint: string }

/** The steps of a claim that resumes none: one map for every such claim, since nobody writes to it. */
export const NO_STEPS: ReadonlyMap<string, string> = new Map()
