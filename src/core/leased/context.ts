import { callReporter, type CallOutcome, type ReportCall } from '../call.js'
import { IdemError } from '../errors/idem-error.js'
import type { CallDefaults } from '../engine-options.js'
import type { EventStream, OutcomeEvent, OutcomeKind } from '../events.js'
import { reportLease } from '../lease-report.js'
import type { LeasedConfig, LeasedErrorPolicy } from './options.js'
import type { LeasedStore } from '../../ports/leased-store.js'
import { LeasedIo } from './io.js'

/**
 * What every call of one leased engine shares: made once, with the engine, from its
 * checked options. The runner (`runner.ts`) and each call that holds a lease
 * (`HeldCall`) read it.
 */
export class LeasedContext {
  /** The store as given: its name. */
  readonly store: LeasedStore
  /** The largest outcome the store holds, as it said at creation. */
  readonly maxOutcomeBytes: number
  /** The store as the engine reaches it while someone listens: every round trip of a call timed, the heartbeat's and the steps' included. */
  readonly io: LeasedIo
  readonly leaseMs: number
  readonly heartbeatMs: number
  readonly onError: LeasedErrorPolicy
  readonly defaults: CallDefaults
  /** Reports a call's outcome; a fresh call and a replay check `onOutcome` and `events.listening` first, so that a quiet one runs none of it. */
  readonly report: ReportCall
  readonly events: EventStream
  readonly onOutcome: ((event: OutcomeEvent) => void) | undefined

  constructor({ store, leaseMs, heartbeatMs, onError, defaults, events, onOutcome }: LeasedConfig) {
    this.store = store
    this.maxOutcomeBytes = store.maxOutcomeBytes
    this.io = new LeasedIo(store, events)
    this.leaseMs = leaseMs
    this.heartbeatMs = heartbeatMs
    this.onError = onError
    this.defaults = defaults
    this.report = callReporter(events, onOutcome, 'leased', store.name)
    this.events = events
    this.onOutcome = onOutcome
  }

  /** Reports a change of a key's lease (`{ type: 'lease' }`) while someone listens. */
  leaseChanged(change: 'takeover' | 'lost' | 'fenced', scope: string): void {
    reportLease(this.events, change, this.store.name, scope)
  }

  /**
   * Reports a call that fails with `error` as `kind` (a lost lease as such too): refused
   * with an error of idem's own, thrown with anything else (what the function threw).
   */
  failed(error: unknown, kind: OutcomeKind, scope: string, started: number): CallOutcome<never> {
    if (kind === 'lease-lost') this.leaseChanged('lost', scope)
    this.report(kind, scope, started, error)
    if (error instanceof IdemError) return { kind: 'refused', error }
    throw error
  }
}
