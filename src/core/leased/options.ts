import { assertCallDefaults, assertReporting, DEFAULT_DEADLINE_MS, DEFAULT_TTL_MS, DEFAULT_WAIT_MS, explicitSettings, type CallDefaults, type EngineSettings } from '../engine-options.js'
import { InvalidOptionError } from '../errors/invalid-option.js'
import { idemEvents, type EventStream, type OutcomeEvent } from '../events.js'
import { assertOutcomeLimit } from '../outcome.js'
import { assertDuration, assertKnownOptions, optionNames } from '../errors/option-checks.js'
import type { LeasedStore } from '../../ports/leased-store.js'

/** 5 seconds: how long a claim holds without renewal by default, so a crashed holder blocks its key for no longer. */
export const DEFAULT_LEASE_MS = 5_000

/**
 * What a failed call (its function threw, or discarded its outcome) does with its claim:
 * - `'release-if-no-steps'`: with no completed step, the claim is released and a retry
 *   runs afresh at once (DESIGN "What is stored"). With completed steps the key stays
 *   resumable: the lease is left to run out, then the same request takes over after
 *   the last completed step; a different request is refused (`FingerprintMismatchError`).
 * - `'keep'`: the claim is never released on failure; duplicates wait (or are refused as in flight)
 *   until the lease runs out. For effects whose result may still be in doubt.
 */
export type LeasedErrorPolicy = 'release-if-no-steps' | 'keep'

/**
 * What `createLeasedIdem` takes: the store, the lease and its renewal, retention, wait
 * and the error policy.
 */
export interface LeasedIdemOptions {
  /** Where claims, steps and outcomes live (e.g. `redisStore(...)`). */
  store: LeasedStore
  /** How long a claim holds without renewal; a crashed holder's key is taken over after this. @default 5000 */
  leaseMs?: number
  /** How often the running call renews its lease; less than `leaseMs`. @default leaseMs / 3 */
  heartbeatMs?: number
  /** Retention of a stored outcome (and of an unfinished key, beyond its lease). @default 24 h */
  ttlMs?: number
  /** How long a duplicate polls for the first call's outcome before `InFlightError`. @default 5000 */
  waitMs?: number
  /**
   * How long the function may hold the key (from when it starts). Past it the heartbeat
   * stops, `ctx.signal` aborts, no new step starts, the claim is handled as after an
   * error (`onError`: released when no step was saved) and the call fails with
   * `OverranError`; its outcome is never stored. @default 300000 (5 minutes)
   */
  deadlineMs?: number
  /** What a failed call does with its claim. @default 'release-if-no-steps' */
  onError?: LeasedErrorPolicy
  /** Where the engine reports each call (`{ type: 'call', engine: 'leased', … }`). @default the process-wide `idemEvents` */
  events?: EventStream
  /** Called once per call with its outcome, besides the event stream. Must not throw. */
  onOutcome?: (event: OutcomeEvent) => void
}

/** What `createLeasedIdem` made of its options: checked, with the defaults applied. */
export interface LeasedConfig {
  readonly store: LeasedStore
  readonly leaseMs: number
  readonly heartbeatMs: number
  readonly onError: LeasedErrorPolicy
  readonly defaults: CallDefaults
  readonly events: EventStream
  readonly onOutcome: ((event: OutcomeEvent) => void) | undefined
  readonly settings: EngineSettings
}

const OPTIONS = optionNames<LeasedIdemOptions>({
  store: true, leaseMs: true, heartbeatMs: true, ttlMs: true, waitMs: true, deadlineMs: true, onError: true, events: true, onOutcome: true,
})

/**
 * Checks `createLeasedIdem`'s options, before anything is made of them, and applies the defaults.
 * @throws InvalidOptionError naming the option
 */
export function leasedConfig(options: LeasedIdemOptions): LeasedConfig {
  assertKnownOptions('createLeasedIdem', options, OPTIONS)
  const {
    store,
    leaseMs = DEFAULT_LEASE_MS,
    heartbeatMs = Math.max(1, Math.floor(leaseMs / 3)),
    ttlMs = DEFAULT_TTL_MS,
    waitMs = DEFAULT_WAIT_MS,
    deadlineMs = DEFAULT_DEADLINE_MS,
    onError = 'release-if-no-steps',
    events = idemEvents,
    onOutcome,
  } = options
  if (store === null || typeof store !== 'object' || typeof store.claim !== 'function') {
    throw new InvalidOptionError('createLeasedIdem: option "store" must be a leased store (e.g. redisStore(...))')
  }
  assertOutcomeLimit('createLeasedIdem', store)
  assertDuration('createLeasedIdem: option "leaseMs"', leaseMs, 2)
  assertDuration('createLeasedIdem: option "heartbeatMs"', heartbeatMs, 1)
  if (heartbeatMs >= leaseMs) {
    throw new InvalidOptionError(`createLeasedIdem: option "heartbeatMs" (${heartbeatMs}) must be less than "leaseMs" (${leaseMs})`)
  }
  const defaults: CallDefaults = { ttlMs, waitMs, deadlineMs }
  assertCallDefaults('createLeasedIdem', defaults)
  if (onError !== 'release-if-no-steps' && onError !== 'keep') {
    throw new InvalidOptionError('createLeasedIdem: option "onError" must be "release-if-no-steps" or "keep"')
  }
  assertReporting('createLeasedIdem', onOutcome, events)
  return { store, leaseMs, heartbeatMs, onError, defaults, events, onOutcome, settings: explicitSettings(options, defaults) }
}
