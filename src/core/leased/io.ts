import { timedRoundTrip, type EventStream } from '../events.js'
import type { Lease, LeaseClaim, LeasedStore } from '../../ports/leased-store.js'

/**
 * The leased store as the engine, its heartbeat and its steps reach it while someone
 * listens: the claim, and every write through the lease it handed back, is timed and
 * reported (`{ type: 'store' }`). A call that starts while nobody listens speaks to the
 * store and its lease directly, and runs none of this. One per engine: a lease needs no
 * wrapper of its own. (`Lease.fencingToken`, read only when a function asks for it, is
 * not one of the engine's round trips.)
 */
export class LeasedIo {
  /** The store's name, for its events and errors. */
  readonly name: string
  /** The largest outcome (and step result) the store holds, as it said at creation. */
  readonly maxOutcomeBytes: number
  readonly #store: LeasedStore
  readonly #events: EventStream

  constructor(store: LeasedStore, events: EventStream) {
    this.name = store.name
    this.maxOutcomeBytes = store.maxOutcomeBytes
    this.#store = store
    this.#events = events
  }

  /** `LeasedStore.claim`. */
  claim(scope: string, key: string, fingerprint: string, leaseMs: number, ttlMs: number): Promise<LeaseClaim> {
    const store = this.#store
    const events = this.#events
    return events.listening
      ? timedRoundTrip(events, this.name, 'claim', () => store.claim(scope, key, fingerprint, leaseMs, ttlMs))
      : store.claim(scope, key, fingerprint, leaseMs, ttlMs)
  }

  /** `Lease.renew`. */
  renew(lease: Lease, leaseMs: number): Promise<boolean> {
    const events = this.#events
    return events.listening ? timedRoundTrip(events, this.name, 'renew', () => lease.renew(leaseMs)) : lease.renew(leaseMs)
  }

  /** `Lease.saveStep`. */
  saveStep(lease: Lease, name: string, result: string): Promise<boolean> {
    const events = this.#events
    return events.listening ? timedRoundTrip(events, this.name, 'step', () => lease.saveStep(name, result)) : lease.saveStep(name, result)
  }

  /** `Lease.complete`. */
  complete(lease: Lease, outcome: string, ttlMs: number): Promise<boolean> {
    const events = this.#events
    return events.listening ? timedRoundTrip(events, this.name, 'complete', () => lease.complete(outcome, ttlMs)) : lease.complete(outcome, ttlMs)
  }

  /** `Lease.release`. */
  release(lease: Lease): Promise<boolean> {
    const events = this.#events
    return events.listening ? timedRoundTrip(events, this.name, 'release', () => lease.release()) : lease.release()
  }
}
