import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { keyId } from '../../ports/key-store.js'
import type { Lease, LeaseClaim, LeasedStore } from '../../ports/leased-store.js'
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
  const state = { closed: false }

  return {
    name: 'memory',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    async claim(scope, key, fingerprint, leaseMs, ttlMs): Promise<LeaseClaim> {
      assertOpen(state)
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
      entries.set(id, { fingerprint, state: 'held', token, leaseUntil: now + leaseMs, outcome: undefined, expiresAt: now + leaseMs + ttlMs, steps })
      return { state: 'acquired', lease: new MemoryLease(entries, id, token, state), steps: new Map(steps) }
    },
    close() {
      state.closed = true
    },
  }
}

function assertOpen(state: { closed: boolean }): void {
  if (state.closed) throw new StoreUnavailableError('The memory leased store is closed')
}

function liveEntry(entry: Entry | undefined, now: number): Entry | undefined {
  return entry === undefined || entry.expiresAt <= now ? undefined : entry
}

/** One claim of a key in memory: its writes change the key's entry only while it is held under this claim's token. */
class MemoryLease implements Lease {
  readonly #entries: Map<string, Entry>
  readonly #id: string
  readonly #token: number
  readonly #store: { closed: boolean }

  constructor(entries: Map<string, Entry>, id: string, token: number, store: { closed: boolean }) {
    this.#entries = entries
    this.#id = id
    this.#token = token
    this.#store = store
  }

  async renew(leaseMs: number): Promise<boolean> {
    const now = Date.now()
    const entry = this.#held(now)
    if (entry === undefined) return false
    entry.leaseUntil = now + leaseMs
    entry.expiresAt = Math.max(entry.expiresAt, entry.leaseUntil)
    return true
  }

  async saveStep(name: string, result: string): Promise<boolean> {
    const entry = this.#held(Date.now())
    if (entry === undefined) return false
    entry.steps.set(name, result)
    return true
  }

  async complete(outcome: string, ttlMs: number): Promise<boolean> {
    const now = Date.now()
    const entry = this.#held(now)
    if (entry === undefined) return false
    Object.assign(entry, { state: 'completed', outcome, expiresAt: now + ttlMs, steps: new Map() })
    return true
  }

  async release(): Promise<boolean> {
    const entry = this.#held(Date.now())
    if (entry === undefined) return false
    entry.state = 'free'
    return true
  }

  async fencingToken(): Promise<number | undefined> {
    return this.#held(Date.now()) === undefined ? undefined : this.#token
  }

  #held(now: number): Entry | undefined {
    assertOpen(this.#store)
    const entry = liveEntry(this.#entries.get(this.#id), now)
    return entry?.state === 'held' && entry.token === this.#token ? entry : undefined
  }
}
