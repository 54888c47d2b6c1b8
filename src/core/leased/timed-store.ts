import { timedRoundTrip, type EventStream } from '../events.js'
import type { LeasedStore } from './store.js'

/**
 * The leased store as the engine, its heartbeat and its steps reach it: every round trip
 * is timed and reported (`{ type: 'store' }`) while someone listens, and passed straight
 * through otherwise.
 */
export function timedLeasedStore(store: LeasedStore, events: EventStream): LeasedStore {
  const name = store.name
  return {
    name,
    maxOutcomeBytes: store.maxOutcomeBytes,
    claim: (scope, key, fingerprint, leaseMs, ttlMs) =>
      events.listening ? timedRoundTrip(events, name, 'claim', () => store.claim(scope, key, fingerprint, leaseMs, ttlMs)) : store.claim(scope, key, fingerprint, leaseMs, ttlMs),
    renew: (scope, key, token, leaseMs) =>
      events.listening ? timedRoundTrip(events, name, 'renew', () => store.renew(scope, key, token, leaseMs)) : store.renew(scope, key, token, leaseMs),
    saveStep: (scope, key, token, step, result) =>
      events.listening ? timedRoundTrip(events, name, 'step', () => store.saveStep(scope, key, token, step, result)) : store.saveStep(scope, key, token, step, result),
    complete: (scope, key, token, outcome, ttlMs) =>
      events.listening ? timedRoundTrip(events, name, 'complete', () => store.complete(scope, key, token, outcome, ttlMs)) : store.complete(scope, key, token, outcome, ttlMs),
    release: (scope, key, token) =>
      events.listening ? timedRoundTrip(events, name, 'release', () => store.release(scope, key, token)) : store.release(scope, key, token),
  }
}
