import { InvalidOptionError } from './errors/invalid-option.js'
import { assertKnownOptions, optionNames } from './errors/option-checks.js'
import type { LeaseClaim, LeasedStore } from '../ports/leased-store.js'
import type { BeginRequest, KeyRecord, KeyStore, Session } from '../ports/key-store.js'
import type { KeyPeek, PeekResult } from '../ports/key-peek.js'

/** The dual-read window: where keys are recorded now, and the store they were recorded in before. */
export interface DualReadOptions<Current> {
  /** Where new keys go. */
  current: Current
  /** The store keys went to before the switch: consulted for every key `current` has not seen. */
  previous: KeyPeek
  /**
   * When the window ends: from then on `previous` is no longer consulted. Set it to the
   * switch plus the longest retention of the keys in `previous` (24 h for HTTP keys by
   * default). @default never
   */
  until?: Date
}

const OPTIONS = optionNames<DualReadOptions<unknown>>({ current: true, previous: true, until: true })

/**
 * A leased store that records new keys in `current` and keeps answering keys recorded
 * in `previous` (any store with `peek`: Postgres's transactional store, Redis, DynamoDB)
 * until they expire there: the second half of a move between stores without losing
 * dedupe (see docs/scaling.md). Every claim is made in `current` first and only then is
 * `previous` consulted, so a call that runs in either store is seen by the other side
 * before it can start there: a completed key in `previous` is replayed from it (and the
 * claim in `current` released), a key held there answers "running" (the engine waits or
 * 409s, then tries again), and only a key `previous` does not have runs, in `current`,
 * through the lease `current` handed back.
 *
 * @example
 * const store = dualReadStore({ current: redisStore({ client }), previous: postgresStore({ pool }), until: new Date(switchedAt + 86_400_000) })
 * const idem = createLeasedIdem({ store })
 */
export function dualReadStore(options: DualReadOptions<LeasedStore>): LeasedStore {
  assertKnownOptions('dualReadStore', options, OPTIONS)
  const { current, previous, until } = options
  assertWindow('dualReadStore', current, previous, until, ['claim'])
  const ends = until?.getTime() ?? Infinity
  return {
    name: current.name,
    // Outcomes are written to `current` only.
    maxOutcomeBytes: current.maxOutcomeBytes,
    async claim(scope, key, fingerprint, leaseMs, ttlMs): Promise<LeaseClaim> {
      const claim = await current.claim(scope, key, fingerprint, leaseMs, ttlMs)
      if (claim.state !== 'acquired' || claim.steps.size > 0 || Date.now() >= ends) return claim
      let seen: PeekResult
      try {
        seen = await previous.peek(scope, key)
      } catch (error) {
        await claim.lease.release().catch(() => {})
        throw error
      }
      if (seen.state === 'absent') return claim
      await claim.lease.release()
      // A call still running on the old side: its fingerprint is not known yet, so the
      // caller's own makes the engine wait (or refuse it as in flight) rather than as a mismatch.
      return seen.state === 'completed' ? { state: 'completed', record: seen.record } : { state: 'running', fingerprint }
    },
  }
}

/**
 * The transactional store's dual-read window: keys are claimed in `current` (its
 * transaction, its lock) and, for a key `current` has not seen, `previous` is consulted
 * while the claim is held: its completed record is replayed, a key held there is
 * `locked` (waited for up to the call's `waitMs`). Use it for a move between key tables
 * (Postgres `idem_keys` to daily partitions, or to another database), and, with the new
 * store as `previous`, for the first half of a move from a transactional store to a
 * leased one: while the fleet switches over, the instances still writing the old store
 * see the keys the switched ones record in the new.
 *
 * @example
 * const store = dualReadKeyStore({ current: postgresStore({ pool, keyLayout: 'daily-partitions' }), previous: postgresStore({ pool }) })
 */
export function dualReadKeyStore<Tx>(options: DualReadOptions<KeyStore<Tx>>): KeyStore<Tx> {
  assertKnownOptions('dualReadKeyStore', options, OPTIONS)
  const { current, previous, until } = options
  assertWindow('dualReadKeyStore', current, previous, until, ['begin'])
  const ends = until?.getTime() ?? Infinity
  return {
    name: current.name,
    maxOutcomeBytes: current.maxOutcomeBytes,
    async begin(request: BeginRequest<Tx>): Promise<Session<Tx>> {
      const deadline = Date.now() + Math.max(0, request.waitMs)
      let delay = 10
      for (;;) {
        const session = await current.begin(request)
        if (session.claim.state !== 'new' || Date.now() >= ends) return session
        let seen: PeekResult
        try {
          seen = await previous.peek(request.scope, request.key)
        } catch (error) {
          await session.rollback()
          throw error
        }
        if (seen.state === 'absent') return session
        await session.rollback()
        if (seen.state === 'completed') return settled(session, { state: 'found', record: seen.record })
        const left = deadline - Date.now()
        if (left <= 0 || session.joined) return settled(session, { state: 'locked' })
        await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)))
        delay = Math.min(delay * 2, 250)
      }
    },
  }
}

/** A session already ended (rolled back) whose claim says what `previous` had. */
function settled<Tx>(session: Session<Tx>, claim: Session<Tx>['claim']): Session<Tx> {
  return {
    tx: session.tx,
    claim,
    joined: session.joined,
    async commit() {
      throw new Error('dualReadKeyStore: a key answered by the previous store has nothing to commit')
    },
    async rollback() {},
  }
}

function assertWindow(caller: string, current: unknown, previous: unknown, until: unknown, methods: string[]): void {
  const store = current as Record<string, unknown> | null
  if (store === null || typeof store !== 'object' || methods.some((m) => typeof store[m] !== 'function')) {
    throw new InvalidOptionError(`${caller}: option "current" must be a store with ${methods.join(', ')}`)
  }
  if (previous === null || typeof previous !== 'object' || typeof (previous as KeyPeek).peek !== 'function') {
    throw new InvalidOptionError(`${caller}: option "previous" must be a store with peek() (postgresStore, redisStore, dynamodbStore)`)
  }
  if (until !== undefined && !(until instanceof Date && Number.isFinite(until.getTime()))) {
    throw new InvalidOptionError(`${caller}: option "until" must be a Date`)
  }
}
