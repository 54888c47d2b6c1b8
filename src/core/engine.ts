import { FingerprintMismatchError } from './errors/fingerprint-mismatch.js'
import { InFlightError } from './errors/in-flight.js'
import { OutcomeTooLargeError } from './errors/outcome-too-large.js'
import { OverranError } from './errors/overran.js'
import { callReporter, resolveCall, type CallOptions, type ReportCall, type ResolvedCall } from './call.js'
import { decide } from './decide.js'
import { isThenable, withinDeadline } from './hold-clock.js'
import type { CallDefaults, EngineSettings } from './engine-options.js'
import { timedRoundTrip, warn, type EventStream } from './events.js'
import { idemConfig, type IdemConfig, type IdemOptions } from './idem-options.js'
import { bytesOver, parseOutcome, replayedOversized, serializeOutcome } from './outcome.js'
import { isDiscarded, type Discarded } from './result.js'
import type { KeyStore, Session } from './store.js'
import { optionNames } from './validate.js'

export type { OutcomeEvent, OutcomeKind } from './events.js'
export { DEFAULT_DEADLINE_MS } from './engine-options.js'
export { DEFAULT_TTL_MS, DEFAULT_WAIT_MS, type EngineSettings } from './engine-options.js'
export type { IdemOptions } from './idem-options.js'

/**
 * One engine call: its scope, key and input (see `CallOptions`), and optionally a
 * transaction to join.
 */
export interface RunOptions<Tx> extends CallOptions {
  /** Join this open transaction instead of opening one; the caller commits it. */
  tx?: Tx
}

/** What `idem.run` resolves to: the value, and whether it was replayed or stored. */
export interface RunResult<T> {
  /**
   * The outcome: the stored JSON form of what the function returned, or the stored one
   * on a replay (parsed when first read). A discarded value is the function's own.
   */
  readonly value: T
  /** True when the stored outcome of an earlier call was returned and the function did not run. */
  readonly replayed: boolean
  /** False when the function discarded its value (`discard`): nothing was committed. */
  readonly stored: boolean
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
  const { run } = new TransactionalEngine(config)
  return { run, store: config.store, settings: config.settings }
}

/** What a call's function returns: its value, or `discard(value)`, now or as a promise. */
type CallFunction<Tx, T> = (tx: Tx) => T | Discarded<T> | Promise<T | Discarded<T>>

/**
 * The transactional engine over one store, made once by `createIdem`: `run` opens a
 * session on the key, has `decide` say what its claim means, and acts on it (replays,
 * refuses, retries in a fresh transaction, or runs the function and commits).
 */
class TransactionalEngine<Tx> {
  readonly #store: KeyStore<Tx>
  readonly #maxOutcomeBytes: number
  readonly #defaults: CallDefaults
  readonly #events: EventStream
  readonly #report: ReportCall

  constructor({ store, defaults, events, onOutcome }: IdemConfig<Tx>) {
    this.#store = store
    this.#maxOutcomeBytes = store.maxOutcomeBytes
    this.#defaults = defaults
    this.#events = events
    this.#report = callReporter(events, onOutcome, 'transactional', store.name)
  }

  /** `Idem.run`. An arrow, made with the engine, so that it works taken off it. */
  readonly run = async <T>(options: RunOptions<Tx>, fn: CallFunction<Tx, T>): Promise<RunResult<T>> => {
    const started = performance.now()
    const { tx } = options
    const call = resolveCall(options, this.#defaults, RUN_OPTIONS)
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
        this.#report('error', scope, started, error)
        throw error
      }
      const decision = decide(session.claim, fingerprint)
      switch (decision.kind) {
        case 'run':
          return await this.#execute(session, fn, call, started)
        case 'replay': {
          // The session wrote nothing; ending it need not delay the answer, so a replay
          // costs the caller one read round trip. `rollback` never rejects.
          void session.rollback()
          let replay: RunResult<T>
          try {
            replay = replayedResult<T>(decision.record.outcome)
          } catch (error) {
            this.#report('error', scope, started, error)
            throw error
          }
          this.#report('replayed', scope, started)
          return replay
        }
        case 'mismatch': {
          void session.rollback()
          const error = new FingerprintMismatchError(
            `Key ${JSON.stringify(key)} was first used with a different request; use a new key for a new request`,
          )
          this.#report('mismatch', scope, started, error)
          throw error
        }
        case 'retry':
          // A stale snapshot can only be cured by a fresh transaction, which we own unless joined.
          await session.rollback()
          if (!session.joined && attempt === 0) continue
          throw this.#inFlight(
            `A call with key ${JSON.stringify(key)} finished while this transaction waited; its snapshot cannot see the result. Retry in a new transaction`,
            scope,
            started,
          )
        case 'in-flight':
          await session.rollback()
          throw this.#inFlight(`A call with key ${JSON.stringify(key)} is still in progress (waited ${call.waitMs} ms)`, scope, started)
      }
    }
  }

  #inFlight(message: string, scope: string, started: number): InFlightError {
    const error = new InFlightError(message)
    this.#report('in-flight', scope, started, error)
    return error
  }

  /** Runs the function with the session's transaction, under its deadline, and commits its outcome (or rolls back). */
  async #execute<T>(session: Session<Tx>, fn: CallFunction<Tx, T>, call: ResolvedCall, started: number): Promise<RunResult<T>> {
    let outcome = 'null'
    let returned: T | Discarded<T>
    let overran: OverranError | undefined
    try {
      const running = fn(session.tx)
      // A function that returned a value is done; one still running has a deadline.
      returned = isThenable(running)
        ? await withinDeadline(running, call.deadlineMs, () => {
            if (session.abandon === undefined) return this.#held(session, call)
            return session.abandon().then(() => (overran = overranError(call)))
          })
        : await running
      if (!isDiscarded(returned)) {
        outcome = serializeOutcome(returned)
        const outcomeBytes = bytesOver(outcome, this.#maxOutcomeBytes)
        if (outcomeBytes !== undefined) throw this.#tooLarge(call, outcomeBytes)
      }
    } catch (error) {
      if (overran !== undefined && error === overran) {
        this.#report('overran', call.scope, started, overran)
        throw overran
      }
      await session.rollback()
      // What fn threw is most likely the dead connection's own error, surfacing through
      // its queries; the call failed because the store did.
      const failure = session.lost?.() ?? error
      this.#report('error', call.scope, started, failure)
      throw failure
    }
    if (isDiscarded(returned)) {
      await session.rollback()
      // What the call gave up on may be the dead connection's doing: then it failed.
      const lost = session.lost?.()
      if (lost !== undefined) {
        this.#report('error', call.scope, started, lost)
        throw lost
      }
      this.#report('not-stored', call.scope, started)
      return { value: returned.value, replayed: false, stored: false }
    }
    const events = this.#events
    try {
      const record = { fingerprint: call.fingerprint, outcome, ttlMs: call.ttlMs }
      await (events.listening ? timedRoundTrip(events, this.#store.name, 'commit', () => session.commit(record)) : session.commit(record))
    } catch (error) {
      this.#report('error', call.scope, started, error)
      throw error
    }
    this.#report('fresh', call.scope, started)
    return storedResult<T>(outcome, false)
  }

  #tooLarge(call: ResolvedCall, outcomeBytes: number): OutcomeTooLargeError {
    const maxOutcomeBytes = this.#maxOutcomeBytes
    return new OutcomeTooLargeError(
      `The outcome of key ${JSON.stringify(call.key)} is ${outcomeBytes} bytes, more than the ${this.#store.name} store holds (${maxOutcomeBytes} bytes): ` +
        'the call was rolled back, so nothing happened',
      { outcomeBytes, maxOutcomeBytes },
    )
  }

  // A session the store cannot end under its running function (SQLite's one connection,
  // a transaction the caller owns) stays until the function ends; the deadline says so.
  #held(session: Session<Tx>, call: ResolvedCall): undefined {
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

/**
 * A replay's result, its stored outcome parsed at once: a row that cannot be read
 * fails the call with `OutcomeUnreadableError` rather than surfacing later as whatever
 * reading a broken value throws, and the record of an outcome too large to keep (a
 * leased call's) with `OutcomeTooLargeError`.
 */
export function replayedResult<T>(outcome: string): RunResult<T> {
  const oversized = replayedOversized(outcome)
  if (oversized !== undefined) throw oversized
  const value = parseOutcome<T>(outcome)
  return { value, replayed: true, stored: true }
}

/**
 * A result whose value is the stored JSON text, parsed only when read: a front end that
 * answers with what the function returned (the HTTP middleware) never pays for parsing
 * back what it just serialised.
 */
export function storedResult<T>(outcome: string, replayed: boolean): RunResult<T> {
  return new StoredResult<T>(outcome, replayed)
}

class StoredResult<T> implements RunResult<T> {
  // `value` is an own, enumerable accessor, so a spread or a deep equality sees the
  // value; one shared descriptor keeps every result on one shape (an object literal
  // with a getter cost a fresh call about 2 µs).
  static readonly #value: PropertyDescriptor = {
    get(this: StoredResult<unknown>) {
      return this.#read()
    },
    enumerable: true,
    configurable: true,
  }

  // Assigned in the constructor, in this order: the order a spread and JSON show them in.
  declare readonly value: T
  declare readonly replayed: boolean
  declare readonly stored: true
  readonly #outcome: string
  #parsed: { value: T } | undefined

  constructor(outcome: string, replayed: boolean) {
    Object.defineProperty(this, 'value', StoredResult.#value)
    this.replayed = replayed
    this.stored = true
    this.#outcome = outcome
  }

  #read(): T {
    this.#parsed ??= { value: parseOutcome<T>(this.#outcome) }
    return this.#parsed.value
  }

  /** What `console.log` and `util.inspect` show: the fields, with the value read, not `value: [Getter]`. */
  [Symbol.for('nodejs.util.inspect.custom')](_depth: number, options: object, inspect: (value: unknown, options: object) => string): string {
    return inspect({ value: this.value, replayed: this.replayed, stored: this.stored }, options)
  }
}
