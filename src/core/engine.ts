import { FingerprintMismatchError } from './errors/fingerprint-mismatch.js'
import { InFlightError } from './errors/in-flight.js'
import { InvalidOptionError } from './errors/invalid-option.js'
import { resolveCall, type CallOptions } from './call.js'
import { assertDuration } from './validate.js'
import { outcomeReporter, type OutcomeEvent } from './outcome-event.js'
import { parseOutcome, serializeOutcome } from './outcome.js'
import type { Session, Store } from './store.js'

export type { OutcomeEvent, OutcomeKind } from './outcome-event.js'

/** 24 hours: how long HTTP keys are kept by default (DESIGN "Retention"). */
export const DEFAULT_TTL_MS = 24 * 60 * 60 * 1000
/** How long a duplicate waits for the first call by default before `InFlightError`. */
export const DEFAULT_WAIT_MS = 5_000

export interface IdemOptions<Tx> {
  /** Where keys and outcomes live. */
  store: Store<Tx>
  /** Retention of a stored outcome; an expired key counts as new. @default 24 h */
  ttlMs?: number
  /** How long a duplicate waits for the first call before `InFlightError` (the lock timeout). @default 5000 */
  waitMs?: number
  /** Called once per call with its outcome: the hook metrics are built on. Must not throw. */
  onOutcome?: (event: OutcomeEvent) => void
}

export interface RunOptions<Tx> extends CallOptions {
  /** Join this open transaction instead of opening one; the caller commits it. */
  tx?: Tx
  /**
   * Decides whether an outcome is kept. When it returns false the transaction is
   * rolled back (effects and key together) and the outcome is returned unstored, so a
   * retry runs again. The HTTP front end uses it for 5xx responses. @default keep all
   */
  shouldStore?: (value: unknown) => boolean
  /**
   * False to keep only that the key ran, not what it returned: `value` is `fn`'s own
   * on the first call and `null` on replays. The Postgres store then writes the key's
   * record together with the claim, which saves most of its work per call; the inbox
   * uses it. @default true
   */
  storeOutcome?: boolean
}

export interface RunResult<T> {
  /** The outcome: the function's, or the stored one on a replay. */
  value: T
  /** True when the stored outcome of an earlier call was returned and the function did not run. */
  replayed: boolean
  /** False when `shouldStore` refused the outcome (nothing was committed). */
  stored: boolean
}

export interface Idem<Tx> {
  /**
   * Runs `fn` at most once per `(scope, key)`: claims the key in a transaction, runs
   * `fn` with that transaction, stores the outcome and commits, all or nothing. A
   * repeat returns the stored outcome without running `fn`. The returned value is the
   * stored JSON form, on the first call and on replays alike.
   *
   * @throws FingerprintMismatchError the key was used with a different request
   * @throws InFlightError another call holds the key for longer than `waitMs`
   * @throws StoreUnavailableError / MigrationRequiredError from the store, also when the
   *   store lost the transaction while `fn` ran (whatever `fn` threw or returned)
   * @throws OutcomeNotSerializableError `fn` returned something without a JSON form
   * @throws whatever `fn` throws, after rolling back its effects and the key
   */
  run<T>(options: RunOptions<Tx>, fn: (tx: Tx) => T | Promise<T>): Promise<RunResult<T>>
  readonly store: Store<Tx>
  /**
   * An engine with this one's settings (retention, wait, outcome hook) over another
   * store: the inbox runs on the Postgres store's id table this way (`inboxIds`).
   */
  withStore(store: Store<Tx>): Idem<Tx>
}

/**
 * Creates the engine over a store.
 * @example
 * const idem = createIdem({ store: memoryStore() })
 * const { value } = await idem.run({ scope: 'acct_1', key: 'k1', input: { amount: 5 } }, async () => ({ ok: true }))
 */
export function createIdem<Tx>({
  store,
  ttlMs = DEFAULT_TTL_MS,
  waitMs = DEFAULT_WAIT_MS,
  onOutcome,
}: IdemOptions<Tx>): Idem<Tx> {
  if (store === null || typeof store !== 'object' || typeof store.begin !== 'function') {
    throw new InvalidOptionError('createIdem: option "store" must be an idem store (e.g. postgresStore(...))')
  }
  assertDuration('createIdem: option "ttlMs"', ttlMs, 1)
  assertDuration('createIdem: option "waitMs"', waitMs, 0)
  if (onOutcome !== undefined && typeof onOutcome !== 'function') {
    throw new InvalidOptionError('createIdem: option "onOutcome" must be a function')
  }

  const report = outcomeReporter(onOutcome, store.name)

  async function run<T>(options: RunOptions<Tx>, fn: (tx: Tx) => T | Promise<T>): Promise<RunResult<T>> {
    const started = performance.now()
    const { tx } = options
    const { scope, key, fingerprint, ttlMs: callTtl, waitMs: callWait } = resolveCall(options, { ttlMs, waitMs })
    if (options.storeOutcome !== undefined && typeof options.storeOutcome !== 'boolean') {
      throw new InvalidOptionError('run: option "storeOutcome" must be a boolean')
    }
    const keepsOutcome = options.storeOutcome !== false

    // A stale snapshot can only be cured by a fresh transaction, which we own unless joined.
    for (let attempt = 0; ; attempt++) {
      let session: Session<Tx>
      try {
        session = await store.begin({ scope, key, waitMs: callWait, tx, record: keepsOutcome ? undefined : { fingerprint, ttlMs: callTtl } })
      } catch (error) {
        report('error', scope, started, error)
        throw error
      }
      const { claim } = session
      if (claim.state === 'found') {
        // The session wrote nothing; ending it need not delay the answer, so a replay
        // costs the caller one read round trip. `rollback` never rejects.
        void session.rollback()
        if (claim.record.fingerprint !== fingerprint) {
          const error = new FingerprintMismatchError(
            `Key ${JSON.stringify(key)} was first used with a different request; use a new key for a new request`,
          )
          report('mismatch', scope, started, error)
          throw error
        }
        report('replayed', scope, started)
        return { value: parseOutcome<T>(claim.record.outcome), replayed: true, stored: true }
      }
      if (claim.state === 'stale' && !session.joined && attempt === 0) {
        await session.rollback()
        continue
      }
      if (claim.state !== 'new') {
        await session.rollback()
        const error = new InFlightError(
          claim.state === 'locked'
            ? `A call with key ${JSON.stringify(key)} is still in progress (waited ${callWait} ms)`
            : `A call with key ${JSON.stringify(key)} finished while this transaction waited; its snapshot cannot see the result. Retry in a new transaction`,
        )
        report('in-flight', scope, started, error)
        throw error
      }
      return await execute(session, fn, { scope, fingerprint, ttlMs: callTtl, shouldStore: options.shouldStore, keepsOutcome, started })
    }
  }

  async function execute<T>(
    session: Session<Tx>,
    fn: (tx: Tx) => T | Promise<T>,
    call: {
      scope: string
      fingerprint: string
      ttlMs: number
      shouldStore: ((value: unknown) => boolean) | undefined
      keepsOutcome: boolean
      started: number
    },
  ): Promise<RunResult<T>> {
    let outcome: string
    let value: T
    try {
      value = await fn(session.tx)
      outcome = call.keepsOutcome ? serializeOutcome(value) : 'null'
    } catch (error) {
      await session.rollback()
      // What fn threw is most likely the dead connection's own error, surfacing through
      // its queries; the call failed because the store did.
      const failure = session.lost?.() ?? error
      report('error', call.scope, call.started, failure)
      throw failure
    }
    if (call.shouldStore !== undefined && !call.shouldStore(value)) {
      await session.rollback()
      const lost = session.lost?.()
      if (lost !== undefined) {
        report('error', call.scope, call.started, lost)
        throw lost
      }
      report('not-stored', call.scope, call.started)
      return { value, replayed: false, stored: false }
    }
    try {
      await session.commit({ fingerprint: call.fingerprint, outcome, ttlMs: call.ttlMs })
    } catch (error) {
      report('error', call.scope, call.started, error)
      throw error
    }
    report('fresh', call.scope, call.started)
    return { value: call.keepsOutcome ? parseOutcome<T>(outcome) : value, replayed: false, stored: true }
  }

  return { run, store, withStore: (other) => createIdem({ store: other, ttlMs, waitMs, ...(onOutcome === undefined ? {} : { onOutcome }) }) }
}
