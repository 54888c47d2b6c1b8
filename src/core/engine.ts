import {
  CHECKED_RUN,
  callReporter,
  resolveCall,
  runResult,
  serialisedFunction,
  type CallFunction,
  type CallOptions,
  type CallOutcome,
  type CheckedCall,
  type CheckedFunction,
  type CheckedRun,
  type ReportCall,
  type Returned,
  type RunResult,
} from './call.js'
import type { EngineSettings } from './engine-options.js'
import { IdemError } from './errors/idem-error.js'
import { FingerprintMismatchError } from './errors/fingerprint-mismatch.js'
import { InFlightError } from './errors/in-flight.js'
import { OutcomeTooLargeError } from './errors/outcome-too-large.js'
import { OverranError } from './errors/overran.js'
import { timedRoundTrip, warn, type EventStream, type OutcomeEvent, type OutcomeKind } from './events.js'
import { isThenable, withinDeadline } from './hold-clock.js'
import { idemConfig, type IdemConfig, type IdemOptions } from './idem-options.js'
import { bytesOver, replayedValue } from './outcome.js'
import type { Discarded } from './result.js'
import type { Claim, KeyRecord, KeyStore, Session } from '../ports/key-store.js'
import { optionNames } from './errors/option-checks.js'

export type { OutcomeEvent, OutcomeKind } from './events.js'
export type { RunResult } from './call.js'
export { DEFAULT_DEADLINE_MS, DEFAULT_TTL_MS, DEFAULT_WAIT_MS, type EngineSettings } from './engine-options.js'
export type { IdemOptions } from './idem-options.js'

/**
 * One engine call: its scope, key and input (see `CallOptions`), and optionally a
 * transaction to join.
 */
export interface RunOptions<Tx> extends CallOptions {
  /** Join this open transaction instead of opening one; the caller commits it. */
  tx?: Tx
}

/**
 * The transactional engine: effects, key and outcome commit in one transaction (see
 * `createIdem`).
 */
export interface Idem<Tx> {
  /**
   * Runs `fn` at most once per `(scope, key)`: claims the key in a transaction, runs
   * `fn` with that transaction, stores the outcome and commits, all or nothing. A
   * repeat returns the stored outcome without running `fn`. The returned value is the
   * stored JSON form, on the first call and on replays alike. `fn` may return
   * `discard(value)` to roll everything back and get `value` back unstored.
   *
   * @throws FingerprintMismatchError the key was used with a different request
   * @throws InFlightError another call holds the key for longer than `waitMs`
   * @throws OverranError `fn` still ran after `deadlineMs`: rolled back, the key freed (not on SQLite, nor when joined)
   * @throws StoreUnavailableError / MigrationRequiredError from the store, also when the
   *   store lost the transaction while `fn` ran (whatever `fn` threw or returned)
   * @throws OutcomeNotSerializableError `fn` returned something without a JSON form
   * @throws OutcomeTooLargeError `fn` returned something larger than the store holds
   *   (`maxOutcomeBytes`): its effects and the key were rolled back
   * @throws whatever `fn` throws, after rolling back its effects and the key
   */
  run<T>(options: RunOptions<Tx>, fn: (tx: Tx) => T | Discarded<T> | Promise<T | Discarded<T>>): Promise<RunResult<T>>
  readonly store: KeyStore<Tx>
  /** What was set explicitly at creation (see `EngineSettings`). */
  readonly settings: EngineSettings
  /** The checked run idem's front ends call, a call checked once, one outcome back (see `CheckedRun`). Internal to idem's front ends. @internal */
  readonly [CHECKED_RUN]: CheckedRun<Tx>
}

const RUN_OPTIONS = optionNames<RunOptions<unknown>>({ scope: true, key: true, fingerprint: true, input: true, ttlMs: true, waitMs: true, deadlineMs: true, tx: true })

/**
 * Creates the engine over a store.
 * @example
 * const idem = createIdem({ store: memoryStore() })
 * const { value } = await idem.run({ scope: 'acct_1', key: 'k1', input: { amount: 5 } }, async () => ({ ok: true }))
 */
export function createIdem<Tx>(options: IdemOptions<Tx>): Idem<Tx> {
  const config = idemConfig(options)
  const { call } = new TransactionalEngine(config)
  const run = async <T>(given: RunOptions<Tx>, fn: CallFunction<Tx, T>): Promise<RunResult<T>> =>
    runResult(await call(resolveCall(given, config.defaults, RUN_OPTIONS), serialisedFunction(fn), given.tx))
  return { run, store: config.store, settings: config.settings, [CHECKED_RUN]: call }
}

/** What the transactional engine does with a `KeyStore` claim. */
export type ClaimDecision =
  /** The key is this call's: run the function. */
  | { readonly kind: 'run' }
  /** Answer with the stored outcome of an earlier call of the same request; the function does not run. */
  | { readonly kind: 'replay'; readonly record: KeyRecord }
  /** The key was first used with another request: refused. */
  | { readonly kind: 'mismatch' }
  /** Another call holds the key past the wait: refused (the store has waited already). */
  | { readonly kind: 'in-flight' }
  /** The key was freed while this transaction waited, but its snapshot cannot see the record: ask again in a fresh transaction. */
  | { readonly kind: 'retry' }

// Decisions that carry nothing of the call's are made once.
const RUN: ClaimDecision = { kind: 'run' }
const MISMATCH: ClaimDecision = { kind: 'mismatch' }
const IN_FLIGHT: ClaimDecision = { kind: 'in-flight' }
const RETRY: ClaimDecision = { kind: 'retry' }

/**
 * What a call does with what its store found for the key, given the call's own request
 * `fingerprint`. Pure: it reads its arguments only, and allocates only for a replay.
 * @example
 * const decision = decideClaim(session.claim, fingerprint)
 */
export function decideClaim(claim: Claim, fingerprint: string): ClaimDecision {
  switch (claim.state) {
    case 'new':
      return RUN
    case 'found':
      return claim.record.fingerprint === fingerprint ? { kind: 'replay', record: claim.record } : MISMATCH
    case 'locked':
      return IN_FLIGHT
    case 'stale':
      return RETRY
  }
}

/**
 * The transactional engine over one store, made once by `createIdem`: its checked run
 * opens a session on the key, has `decideClaim` say what its claim means, and acts on it
 * (replays, refuses, retries in a fresh transaction, or runs the function and commits).
 */
class TransactionalEngine<Tx> {
  readonly #store: KeyStore<Tx>
  readonly #maxOutcomeBytes: number
  readonly #events: EventStream
  readonly #onOutcome: ((event: OutcomeEvent) => void) | undefined
  readonly #report: ReportCall

  constructor({ store, events, onOutcome }: IdemConfig<Tx>) {
    this.#store = store
    this.#maxOutcomeBytes = store.maxOutcomeBytes
    this.#events = events
    this.#onOutcome = onOutcome
    this.#report = callReporter(events, onOutcome, 'transactional', store.name)
  }

  /** The checked run (`CheckedRun`), joining `tx` when given. An arrow, made with the engine, so that it works taken off it. */
  readonly call = async <V>(call: CheckedCall, fn: CheckedFunction<Tx, V>, tx?: Tx): Promise<CallOutcome<V>> => {
    const started = performance.now()
    const { scope, key, fingerprint } = call
    const store = this.#store
    const events = this.#events
    for (let attempt = 0; ; attempt++) {
      let session: Session<Tx>
      try {
        const request = { scope, key, waitMs: call.waitMs, tx }
        // Timed only while someone listens: the closure is not made otherwise.
        session = await (events.listening ? timedRoundTrip(events, store.name, 'begin', () => store.begin(request)) : store.begin(request))
      } catch (error) {
        return this.#failed(error, scope, started)
      }
      const decision = decideClaim(session.claim, fingerprint)
      switch (decision.kind) {
        case 'run':
          return await this.#execute(session, fn, call, started)
        case 'replay':
          // The session wrote nothing; ending it need not delay the answer, so a replay
          // costs the caller one read round trip. `rollback` never rejects.
          void session.rollback()
          return this.#replayed(decision.record.outcome, scope, started)
        case 'mismatch':
          void session.rollback()
          return this.#refused(new FingerprintMismatchError(`Key ${JSON.stringify(key)} was first used with a different request; use a new key for a new request`), 'mismatch', scope, started)
        case 'retry':
          // A stale snapshot can only be cured by a fresh transaction, which we own unless joined.
          await session.rollback()
          if (!session.joined && attempt === 0) continue
          return this.#refused(
            new InFlightError(`A call with key ${JSON.stringify(key)} finished while this transaction waited; its snapshot cannot see the result. Retry in a new transaction`),
            'in-flight',
            scope,
            started,
          )
        case 'in-flight':
          await session.rollback()
          return this.#refused(new InFlightError(`A call with key ${JSON.stringify(key)} is still in progress (waited ${call.waitMs} ms)`), 'in-flight', scope, started)
      }
    }
  }

  /** Runs the function with the session's transaction, under its deadline, and commits its outcome (or rolls back). */
  async #execute<V>(session: Session<Tx>, fn: CheckedFunction<Tx, V>, call: CheckedCall, started: number): Promise<CallOutcome<V>> {
    let returned: Returned<V>
    let overran: OverranError | undefined
    try {
      const running = fn(session.tx)
      // A function that returned is done; one still running has a deadline.
      returned = isThenable(running)
        ? await withinDeadline(running, call.deadlineMs, () => {
            if (session.abandon === undefined) return this.#held(session, call)
            return session.abandon().then(() => (overran = overranError(call)))
          })
        : running
    } catch (error) {
      if (overran !== undefined && error === overran) return this.#refused(overran, 'overran', call.scope, started)
      return this.#rolledBack(session, error, call, started)
    }
    if (returned.kind === 'discard') {
      await session.rollback()
      // What the call gave up on may be the dead connection's doing: then it failed.
      const lost = session.lost?.()
      if (lost !== undefined) return this.#failed(lost, call.scope, started)
      this.#report('not-stored', call.scope, started)
      return { kind: 'not-stored', value: returned.value }
    }
    const { outcome } = returned
    // A UTF-16 unit is at most 3 bytes of UTF-8: most outcomes are measured by their length alone.
    const outcomeBytes = outcome.length * 3 <= this.#maxOutcomeBytes ? undefined : bytesOver(outcome, this.#maxOutcomeBytes)
    if (outcomeBytes !== undefined) return this.#rolledBack(session, tooLarge(call, outcomeBytes, this.#maxOutcomeBytes, this.#store.name), call, started)
    const events = this.#events
    try {
      const record = { fingerprint: call.fingerprint, outcome, ttlMs: call.ttlMs }
      await (events.listening ? timedRoundTrip(events, this.#store.name, 'commit', () => session.commit(record)) : session.commit(record))
    } catch (error) {
      return this.#failed(error, call.scope, started)
    }
    if (this.#onOutcome !== undefined || events.listening) this.#report('fresh', call.scope, started)
    return { kind: 'fresh', value: returned.value, outcome }
  }

  // Rolls back a call that failed: what fn threw is most likely the dead connection's
  // own error, surfacing through its queries, when the store lost the transaction; the
  // call failed because the store did.
  async #rolledBack<V>(session: Session<Tx>, error: unknown, call: CheckedCall, started: number): Promise<CallOutcome<V>> {
    await session.rollback()
    return this.#failed(session.lost?.() ?? error, call.scope, started)
  }

  #replayed<V>(outcome: string, scope: string, started: number): CallOutcome<V> {
    let value: unknown
    try {
      value = replayedValue(outcome)
    } catch (error) {
      return this.#failed(error, scope, started)
    }
    if (this.#onOutcome !== undefined || this.#events.listening) this.#report('replayed', scope, started)
    return { kind: 'replayed', value }
  }

  #refused<V>(error: IdemError, kind: OutcomeKind, scope: string, started: number): CallOutcome<V> {
    this.#report(kind, scope, started, error)
    return { kind: 'refused', error }
  }

  // A call that failed: idem's own errors are the call's outcome, anything else is thrown.
  #failed<V>(error: unknown, scope: string, started: number): CallOutcome<V> {
    this.#report('error', scope, started, error)
    if (error instanceof IdemError) return { kind: 'refused', error }
    throw error
  }

  // A session the store cannot end under its running function (SQLite's one connection,
  // a transaction the caller owns) stays until the function ends; the deadline says so.
  #held(session: Session<Tx>, call: CheckedCall): undefined {
    const why = session.joined ? 'the call joined your transaction, which is yours to end' : `the ${this.#store.name} store cannot end a transaction while its function runs`
    warn(this.#events, {
      code: 'overran-held',
      source: 'createIdem',
      message: `idem: the call with key ${JSON.stringify(call.key)} (scope ${JSON.stringify(call.scope)}) still runs ${call.deadlineMs} ms after it took its key (deadlineMs); ${why}, so the key stays held until the function ends`,
    })
    return undefined
  }
}

/** What a call past its deadline fails with, its session abandoned. */
function overranError(call: { key: string; deadlineMs: number }): OverranError {
  return new OverranError(
    `The call with key ${JSON.stringify(call.key)} still ran ${call.deadlineMs} ms after it took its key (deadlineMs): its transaction was rolled back and the key freed; retry with the same key`,
  )
}

function tooLarge(call: CheckedCall, outcomeBytes: number, maxOutcomeBytes: number, store: string): OutcomeTooLargeError {
  return new OutcomeTooLargeError(
    `The outcome of key ${JSON.stringify(call.key)} is ${outcomeBytes} bytes, more than the ${store} store holds (${maxOutcomeBytes} bytes): ` +
      'the call was rolled back, so nothing happened',
    { outcomeBytes, maxOutcomeBytes },
  )
}
