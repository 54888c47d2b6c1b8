import type { Lease, LeaseClaim, LeasedStore } from '../../src/index.js'

/** The methods of a lease a test may replace (or watch), by name; what it leaves out goes to the lease as it is. */
export type LeaseOverrides = Partial<Lease>

/**
 * The store, with the writes through each lease its claims hand back replaced where
 * `overrides` says: it gets the lease and the claim's scope and key, and returns the
 * methods to use instead (the lease's own for the rest). What a test injects faults or
 * watches outcomes with, in place of a store of its own.
 * @example withLeases(store, (lease) => ({ complete: async (...args) => (await lease.complete(...args)) && done.push(1) > 0 }))
 */
export function withLeases(store: LeasedStore, overrides: (lease: Lease, scope: string, key: string) => LeaseOverrides): LeasedStore {
  return {
    name: store.name,
    maxOutcomeBytes: store.maxOutcomeBytes,
    async claim(scope, key, fingerprint, leaseMs, ttlMs): Promise<LeaseClaim> {
      const claim = await store.claim(scope, key, fingerprint, leaseMs, ttlMs)
      if (claim.state !== 'acquired') return claim
      const { lease } = claim
      const replaced: Lease = {
        renew: (ms) => lease.renew(ms),
        saveStep: (name, result) => lease.saveStep(name, result),
        complete: (outcome, ms) => lease.complete(outcome, ms),
        release: () => lease.release(),
        fencingToken: () => lease.fencingToken(),
        ...overrides(lease, scope, key),
      }
      return { ...claim, lease: replaced }
    },
  }
}
