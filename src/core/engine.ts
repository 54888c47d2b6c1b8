import { FingerprintMismatchError } from './errors/fingerprint-mismatch.js'
import { InFlightError } from './errors/in-flight.js'
import { InvalidOptionError } from './errors/invalid-option.js'
import { OutcomeTooLargeError } from './errors/outcome-too-large.js'
import { OverranError } from './errors/overran.js'
import { callReporter, resolveCall, type CallOptions } from './call.js'
import { decide } from './decide.js'
import { DEFAULT_DEADLINE_MS, isThenable, withinDeadline } from './deadline.js'
import { idemEvents, timedRoundTrip, warn, type EventStream, type OutcomeEvent } from './events.js'
import { assertOutcomeLimit, bytesOver, parseOutcome, replayedOversized, serializeOutcome } from './outcome.js'
import { isDiscarded, type Discarded } from './result.js'
import type { KeyStore, Session } from './store.js'
import { assertDuration, assertKnownOptions, optionNames } from './validate.js'

export type { OutcomeEvent, OutcomeKind } from './events.js'
export { DEFAULT_DEADLINE_MS } from './deadline.js'

/** 24 hours: how long HTTP keys are kept by default (DESIGN "Retention"). */
export const DEFAULT_TTL_MS = 24 * 60 * 60 * 1000
/** How long a duplicate waits for the first call by default, on direct engine calls, before `InFlightError`. */
export const DEFAULT_WAIT_MS = 5_000

/** What `createIdem` takes: the store, retention, wait and where to report. */
export interface IdemOptions<Tx> {
  /** Where keys and outcomes live. */
  store: KeyStore<Tx>
  /** Retention of a stored outcome; an expired key counts as new. @default 24 h */
  ttlMs?: number
  /** How long a duplicate waits for the first call before `InFlightError` (the lock timeout). @default 5000 */
  waitMs?: number
  /**
   * How long the function may hold the key (from when it starts). Past it the
   * transaction is rolled back, the key freed and the call fails with `OverranError`;
   * whatever the function writes later fails. A store that cannot end a transaction
   * under its function (SQLite's one connection), and a call that joined your
   * transaction (`tx`), keep it until the function ends, with an `overran-held` warning
   * at the deadline. @default 300000 (5 minutes)
   */
  deadlineMs?: number
  /** Where the engine reports each call (`{ type: 'call', … }`). @default the process-wide `idemEvents` */
  events?: EventStream
  /** Called once per call with its outcome, besides the event stream. Must not throw. */
  onOutcome?: (event: OutcomeEvent) => void
}

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

/** The settings an engine was given explicitly: a front end it is passed to keeps them, and applies its own defaults only to the rest. */
export interface EngineSettings {
  readonly ttlMs?: number
  readonly waitMs?: number
  readonly deadlineMs?: number
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

const OPTIONS = optionNames<IdemOptions<unknown>>({ store: true, ttlMs: true, waitMs: true, deadlineMs: true, events: true, onOutcome: true })
const RUN_OPTIONS = optionNames<RunOptions<unknown>>({ scope: true, key: true, fingerprint: true, input: true, ttlMs: true, waitMs: true, deadlineMs: true, tx: true })

/**
 * Creates the engine over a store.
 * @example
 * const idem = createIdem({ store: memoryStore() })
 * const { value } = await idem.run({ scope: 'acct_1', key: 'k1', input: { amount: 5 } }, async () => ({ ok: true }))
 */
export function createIdem<Tx>(options: IdemOptions<Tx>): Idem<Tx> {
  assertKnownOptions('createIdem', options, OPTIONS)
  const { store, ttlMs = DEFAULT_TTL_MS, waitMs = DEFAULT_WAIT_MS, deadlineMs = DEFAULT_DEADLINE_MS, events = idemEvents, onOutcome } = options
  if (store === null || typeof store !== 'object' || typeof store.begin !== 'function') {
    throw new InvalidOptionError('createIdem: option "store" must be an idem store (e.g. postgresStore(...))')
  }
  assertOutcomeLimit('createIdem', store)
  const { maxOutcomeBytes } = store
  assertDuration('createIdem: option "ttlMs"', ttlMs, 1)
  assertDuration('createIdem: option "waitMs"', waitMs, 0)
  assertDuration('createIdem: option "deadlineMs"', deadlineMs, 1)
  if (onOutcome !== undefined && typeof onOutcome !== 'function') {
    throw new InvalidOptionError('createIdem: option "onOutcome" must be a function')
  }
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError('createIdem: option "events" must be an event stream (createEventStream())')
  }
  const settings: EngineSettings = {
    ...(options.ttlMs === undefined ? {} : { ttlMs }),
    ...(options.waitMs === undefined ? {} : { waitMs }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs }),
  }

  const report = callReporter(events, onOutcome, 'transactional', store.name)

  async function run<T>(options: RunOptions<Tx>, fn: (tx: Tx) => T | Discarded<T> | Promise<T | Discarded<T>>): Promise<RunResult<T>> {
    const started = performance.now()
    const { tx } = options
    const { scope, key, fingerprint, ttlMs: callTtl, waitMs: callWait, deadlineMs: callDeadline } = resolveCall(options, { ttlMs, waitMs, deadlineMs }, RUN_OPTIONS)

    for (let attempt = 0; ; attempt++) {
      let session: Session<Tx>
      try {
        const request = { scope, key, waitMs: callWait, tx }
        // Timed only while someone listens: the closure is not made otherwise.
        session = await (events.listening ? timedRoundTrip(events, store.name, 'begin', () => store.begin(request)) : store.begin(request))
      } catch (error) {
        report('error', scope, started, error)
        throw error
      }
      const decision = decide(session.claim, fingerprint)
      switch (decision.kind) {
        case 'run':
          return await execute(session, fn, { scope, key, fingerprint, ttlMs: callTtl, deadlineMs: callDeadline, started })
        case 'replay': {
          // The session wrote nothing; ending it need not delay the answer, so a replay
          // costs the caller one read round trip. `rollback` never rejects.
          void session.rollback()
          let replay: RunResult<T>
          try {
            replay = replayedResult<T>(decision.record.outcome)
          } catch (error) {
            report('error', scope, started, error)
            throw error
          }
          report('replayed', scope, started)
          return replay
        }
        case 'mismatch': {
          void session.rollback()
          const error = new FingerprintMismatchError(
            `Key ${JSON.stringify(key)} was first used with a different request; use a new key for a new request`,
          )
          report('mismatch', scope, started, error)
          throw error
        }
        case 'retry':
          // A stale snapshot can only be cured by a fresh transaction, which we own unless joined.
          await session.rollback()
          if (!session.joined && attempt === 0) continue
          throw inFlight(
            `A call with key ${JSON.stringify(key)} finished while this transaction waited; its snapshot cannot see the result. Retry in a new transaction`,
            scope,
            started,
          )
        case 'in-flight':
          await session.rollback()
          throw inFlight(`A call with key ${JSON.stringify(key)} is still in progress (waited ${callWait} ms)`, scope, started)
      }
    }
  }

  function inFlight(message: string, scope: string, started: number): InFlightError {
    const error = new InFlightError(message)
    report('in-flight', scope, started, error)
    return error
  }

  async function execute<T>(
    session: Session<Tx>,
    fn: (tx: Tx) => T | Discarded<T> | Promise<T | Discarded<T>>,
    call: { scope: string; key: string; fingerprint: string; ttlMs: number; deadlineMs: number; started: number },
  ): Promise<RunResult<T>> {
    let outcome = 'null'
    let returned: T | Discarded<T>
    let overran: OverranError | undefined
    try {
      const running = fn(session.tx)
      // A function that returned a value is done; one still running has a deadline.
      returned = isThenable(running)
        ? await withinDeadline(running, call.deadlineMs, () => {
            if (session.abandon === undefined) return held(session, call)
            return session.abandon().then(() => (overran = overranError(call)))
          })
        : await running
      if (!isDiscarded(returned)) {
        outcome = serializeOutcome(returned)
        const outcomeBytes = bytesOver(outcome, maxOutcomeBytes)
        if (outcomeBytes !== undefined) {
          throw new OutcomeTooLargeError(
            `The outcome of key ${JSON.stringify(call.key)} is ${outcomeBytes} bytes, more than the ${store.name} store holds (${maxOutcomeBytes} bytes): ` +
              'the call was rolled back, so nothing happened',
            { outcomeBytes, maxOutcomeBytes },
          )
        }
      }
    } catch (error) {
      if (overran !== undefined && error === overran) {
        report('overran', call.scope, call.started, overran)
        throw overran
      }
      await session.rollback()
      // What fn threw is most likely the dead connection's own error, surfacing through
      // its queries; the call failed because the store did.
      const failure = session.lost?.() ?? error
      report('error', call.scope, call.started, failure)
      throw failure
    }
    if (isDiscarded(returned)) {
      await session.rollback()
      // What the call gave up on may be the dead connection's doing: then it failed.
      const lost = session.lost?.()
      if (lost !== undefined) {
        report('error', call.scope, call.started, lost)
        throw lost
      }
      report('not-stored', call.scope, call.started)
      return { value: returned.value, replayed: false, stored: false }
    }
    try {
      const record = { fingerprint: call.fingerprint, outcome, ttlMs: call.ttlMs }
      await (events.listening ? timedRoundTrip(events, store.name, 'commit', () => session.commit(record)) : session.commit(record))
    } catch (error) {
      report('error', call.scope, call.started, error)
      throw error
    }
    report('fresh', call.scope, call.started)
    return storedResult<T>(outcome, false)
  }

  // A session the store cannot end under its running function (SQLite's one connection,
  // a transaction the caller owns) stays until the function ends; the deadline says so.
  function held(session: Session<Tx>, call: { scope: string; key: string; deadlineMs: number }): undefined {
    const why = session.joined ? 'the call joined your transaction, which is yours to end' : `the ${store.name} store cannot end a transaction while its function runs`
    warn(events, {
      code: 'overran-held',
      source: 'createIdem',
      message: `idem: the call with key ${JSON.stringify(call.key)} (scope ${JSON.stringify(call.scope)}) still runs ${call.deadlineMs} ms after it took its key (deadlineMs); ${why}, so the key stays held until the function ends`,
    })
    return undefined
  }

  return { run, store, settings }
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
