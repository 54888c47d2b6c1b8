import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { keyId } from '../../core/identity.js'
import type { LeaseClaim, LeasedStore } from '../../core/leased/store.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'

/**
 * The leased-engine store in memory, for tests and single-process tools; nothing
 * survives a restart.
 */
export interface MemoryLeasedStore extends LeasedStore {
  /** Makes every later call fail with `StoreUnavailableError`, like a store that went away. */
  close(): void
}

interface Entry {
  fingerprint: string
  state: 'held' | 'free' | 'completed'
  token: number
  leaseUntil: number
  outcome: string | undefined
  expiresAt: number
  steps: Map<string, string>
}

/**
 * The leased store in process memory, for unit tests, examples and docs. Not durable
 * and not shared between processes; leases, fencing, steps and expiry behave as in
 * the Redis and SQL leased stores. Every method is synchronous inside, so each is
 * atomic with respect to the others.
 * @example const idem = createLeasedIdem({ store: memoryLeasedStore() })
 */
export function memoryLeasedStore(): MemoryLeasedStore {
  const entries = new Map<string, Entry>()
  let closed = false

  function open(): void {
    if (closed) throw new StoreUnavailableError('The memory leased store is closed')
  }

  function live(scope: string, key: string, now: number): Entry | undefined {
    return liveEntry(entries.get(keyId(scope, key)), now)
  }

  function liveEntry(entry: Entry | undefined, now: number): Entry | undefined {
    return entry === undefined || entry.expiresAt <= now ? undefined : entry
  }

  function held(scope: string, key: string, token: number, now: number): Entry | undefined {
    const entry = live(scope, key, now)
    return entry?.state === 'held' && entry.token === token ? entry : undefined
  }

  return {
    name: 'memory',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    async claim(scope, key, fingerprint, leaseMs, ttlMs): Promise<LeaseClaim> {
      open()
      const now = Date.now()
      const id = keyId(scope, key)
      // Expired entries still hold the last token, so a takeover's token keeps growing.
      const stored = entries.get(id)
      const entry = liveEntry(stored, now)
      if (entry?.state === 'completed') return { state: 'completed', record: { fingerprint: entry.fingerprint, outcome: entry.outcome! } }
      if (entry?.state === 'held' && entry.leaseUntil > now) return { state: 'running', fingerprint: entry.fingerprint }
      if (entry !== undefined && entry.steps.size > 0 && entry.fingerprint !== fingerprint) {
        return { state: 'running', fingerprint: entry.fingerprint }
      }
      const token = Math.max((stored?.token ?? 0) + 1, now * 1000)
      const steps = entry?.steps ?? new Map<string, string>()
      entries.set(id, {
        fingerprint,
        state: 'held',
        token,
        leaseUntil: now + leaseMs,
        outcome: undefined,
        expiresAt: now + leaseMs + ttlMs,
        steps,
      })
      return { state: 'acquired', token, steps: new Map(steps) }
    },
    async renew(scope, key, token, leaseMs) {
      open()
      const now = Date.now()
      const entry = held(scope, key, token, now)
      if (entry === undefined) return false
      entry.leaseUntil = now + leaseMs
      entry.expiresAt = Math.max(entry.expiresAt, entry.leaseUntil)
      return true
    },
    async saveStep(scope, key, token, name, result) {
      open()
      const entry = held(scope, key, token, Date.now())
      if (entry === undefined) return false
      entry.steps.set(name, result)
      return true
    },
    async complete(scope, key, token, outcome, ttlMs) {
      open()
      const now = Date.now()
      const entry = held(scope, key, token, now)
      if (entry === undefined) return false
      Object.assign(entry, { state: 'completed', outcome, expiresAt: now + ttlMs, steps: new Map() })
      return true
    },
    async release(scope, key, token) {
      open()
      const entry = held(scope, key, token, Date.now())
      if (entry === undefined) return false
      entry.state = 'free'
      return true
    },
    close() {
      closed = true
    },
  }
}
