import { assertCallDefaults, assertReporting, DEFAULT_DEADLINE_MS, DEFAULT_TTL_MS, DEFAULT_WAIT_MS, explicitSettings, type CallDefaults, type EngineSettings } from './engine-options.js'
import { InvalidOptionError } from './errors/invalid-option.js'
import { idemEvents, type EventStream, type OutcomeEvent } from './events.js'
import { assertOutcomeLimit } from './outcome.js'
import type { KeyStore } from '../ports/key-store.js'
import { assertKnownOptions, optionNames } from './errors/option-checks.js'

/** What `createIdem` takes: the store, retention, wait and where to report. */
export interface IdemOptions<Tx> {
  /** Where keys and outcomes live. */
  store: KeyStore<Tx>
  /** Retention of a stored outcome; an expired key counts as new. @default 24 h */
  ttlMs?: number
  /** How long a duplicate waits for the first call before `InFlightError` (the lock timeout). @default 5000 */
  waitMs?: number
  /**
   * How long the function may hold the key (from when it starts). Past it the
   * transaction is rolled back, the key freed and the call fails with `OverranError`;
   * whatever the function writes later fails. A store that cannot end a transaction
   * under its function (SQLite's one connection), and a call that joined your
   * transaction (`tx`), keep it until the function ends, with an `overran-held` warning
   * at the deadline. @default 300000 (5 minutes)
   */
  deadlineMs?: number
  /** Where the engine reports each call (`{ type: 'call', … }`). @default the process-wide `idemEvents` */
  events?: EventStream
  /** Called once per call with its outcome, besides the event stream. Must not throw. */
  onOutcome?: (event: OutcomeEvent) => void
}

/** What `createIdem` made of its options: checked, with the defaults applied. */
export interface IdemConfig<Tx> {
  readonly store: KeyStore<Tx>
  readonly defaults: CallDefaults
  readonly events: EventStream
  readonly onOutcome: ((event: OutcomeEvent) => void) | undefined
  readonly settings: EngineSettings
}

const OPTIONS = optionNames<IdemOptions<unknown>>({ store: true, ttlMs: true, waitMs: true, deadlineMs: true, events: true, onOutcome: true })

/**
 * Checks `createIdem`'s options, before anything is made of them, and applies the defaults.
 * @throws InvalidOptionError naming the option
 */
export function idemConfig<Tx>(options: IdemOptions<Tx>): IdemConfig<Tx> {
  assertKnownOptions('createIdem', options, OPTIONS)
  const { store, ttlMs = DEFAULT_TTL_MS, waitMs = DEFAULT_WAIT_MS, deadlineMs = DEFAULT_DEADLINE_MS, events = idemEvents, onOutcome } = options
  if (store === null || typeof store !== 'object' || typeof store.begin !== 'function') {
    throw new InvalidOptionError('createIdem: option "store" must be an idem store (e.g. postgresStore(...))')
  }
  assertOutcomeLimit('createIdem', store)
  const defaults: CallDefaults = { ttlMs, waitMs, deadlineMs }
  assertCallDefaults('createIdem', defaults)
  assertReporting('createIdem', onOutcome, events)
  return { store, defaults, events, onOutcome, settings: explicitSettings(options, defaults) }
}
