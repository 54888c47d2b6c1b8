/**
 * What the cases of the leased-store contract (`leased-contract.ts`,
 * `leased-contract-data.ts`) share: their times and the kit every case works with.
 */
import type { LeaseClaim, LeasedStore } from '../ports/leased-store.js'

// Short leases, and waits comfortably longer than them, keep the suite quick and calm.
/** The lease the cases claim with unless they need a longer one. */
export const LEASE_MS = 100
/** A wait comfortably longer than `LEASE_MS`: a lease claimed with it has lapsed after. */
export const LAPSE_MS = 300
/**
 * The lease of a claim a case writes through (a step, a token, a renewal) before letting
 * it lapse: long enough for the write to land on a loaded machine, since a claim without
 * steps may lapse with its lease (a Redis `3h` claim does).
 */
export const WRITING_LEASE_MS = 1_000
/** The retention the cases claim with unless they test expiry. */
export const TTL_MS = 60_000

/** What every case of the leased contract works with: the store under test and a few shorthands over it. */
export interface LeasedCaseKit {
  /** The harness's store, for the case that runs now. */
  store(): LeasedStore
  /** A key no other case or run uses: `label` and a random UUID. */
  fresh(label: string): string
  /** Claims `key` and asserts the claim acquired it: its lease and steps. */
  acquire(scope: string, key: string, fingerprint: string, leaseMs?: number, ttlMs?: number): Promise<Acquired>
  /** Claims `key`, asserts the claim acquired it, and returns the steps it resumes. */
  stepsOf(scope: string, key: string, fingerprint: string): Promise<Record<string, string>>
}

/** An acquired claim. */
export type Acquired = Extract<LeaseClaim, { state: 'acquired' }>

/** Waits `ms`: what the cases wait for is a lease's (or a key's) time running out on the store's clock. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Waits until a lease of `leaseMs` claimed at `claimedAt` (`Date.now()` before the claim was sent) has surely lapsed. */
export function lapsed(claimedAt: number, leaseMs: number): Promise<void> {
  return sleep(claimedAt + leaseMs + LAPSE_MS - Date.now())
}

/** One case of the leased contract: a name, and what it checks with the kit. */
export interface LeasedCase {
  name: string
  run(kit: LeasedCaseKit): Promise<void>
}
