import type { LeaseClaim } from './leased/store.js'
import type { Claim, KeyRecord } from './store.js'

/** Answer with the stored outcome of an earlier call of the same request; the function does not run. */
export interface Replay {
  readonly kind: 'replay'
  readonly record: KeyRecord
}

/** The key was first used with another request: refused (the front end answers a mismatch). */
export interface Mismatch {
  readonly kind: 'mismatch'
  /** True while that other request still runs (a leased claim's `running`). */
  readonly running: boolean
}

/**
 * Another call of the same request holds the key. The transactional engine fails at once
 * (its store has waited already); the leased engine polls until its wait is over.
 */
export interface InFlight {
  readonly kind: 'in-flight'
}

/**
 * The key was freed while this transaction waited for it, but its snapshot cannot see
 * the record: ask again in a fresh transaction, if the call may open one.
 */
export interface Retry {
  readonly kind: 'retry'
}

/** The key is this call's: run the function. `claim` is what the store granted (a lease and its steps). */
export interface Run<C> {
  readonly kind: 'run'
  readonly claim: C
}

/** What the transactional engine does with a `KeyStore` claim. */
export type Decision = Replay | Mismatch | InFlight | Retry | Run<Extract<Claim, { state: 'new' }>>

/** What the leased engine does with a `LeasedStore` claim: a lease is never stale, so never `Retry`. */
export type LeaseDecision = Replay | Mismatch | InFlight | Run<Extract<LeaseClaim, { state: 'acquired' }>>

// Decisions that carry nothing of the call's are made once.
const MISMATCH: Mismatch = { kind: 'mismatch', running: false }
const MISMATCH_RUNNING: Mismatch = { kind: 'mismatch', running: true }
const IN_FLIGHT: InFlight = { kind: 'in-flight' }
const RETRY: Retry = { kind: 'retry' }
const RUN_NEW: Run<{ readonly state: 'new' }> = { kind: 'run', claim: { state: 'new' } }

/**
 * What a call does with what its store found for the key, given the call's own request
 * `fingerprint`: the one decision of both engines, apart from their I/O. Pure: it reads
 * its arguments only, and allocates only for what carries the claim's data (a replay, a
 * lease granted).
 *
 * @example
 * const decision = decide(session.claim, fingerprint)
 * if (decision.kind === 'replay') return replayedResult(decision.record.outcome)
 */
export function decide(claim: Claim, fingerprint: string): Decision
export function decide(claim: LeaseClaim, fingerprint: string): LeaseDecision
export function decide(claim: Claim | LeaseClaim, fingerprint: string): Decision | LeaseDecision {
  switch (claim.state) {
    case 'new':
      return RUN_NEW
    case 'acquired':
      return { kind: 'run', claim }
    case 'found':
    case 'completed':
      return claim.record.fingerprint === fingerprint ? { kind: 'replay', record: claim.record } : MISMATCH
    case 'running':
      return claim.fingerprint === fingerprint ? IN_FLIGHT : MISMATCH_RUNNING
    case 'locked':
      return IN_FLIGHT
    case 'stale':
      return RETRY
  }
}
