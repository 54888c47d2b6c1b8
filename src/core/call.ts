import type { IdemError } from './errors/idem-error.js'
import { InvalidOptionError } from './errors/invalid-option.js'
import type { CallEvent, EventStream, OutcomeEvent, OutcomeKind } from './events.js'
import { isThenable } from './hold-clock.js'
import { checkedKey, checkedScope, type CheckedKey, type CheckedScope } from './identity.js'
import { fingerprintInput } from './json-data.js'
import { parseOutcome, serializeOutcome } from './outcome.js'
import { isDiscarded, type Discarded } from './result.js'
import { assertDuration, assertKnownOptions, type KnownOptions } from './errors/option-checks.js'

/**
 * One engine call, the same in both modes (transactional `createIdem` and leased
 * `createLeasedIdem`): what it is, checked once (`CheckedCall`), what its function hands
 * back (`Returned`), and what the call comes to (`CallOutcome`). The engines' public
 * `run` checks its options here (`resolveCall`), serialises what its function returns
 * (`serialisedFunction`) and turns the outcome into its result or its error
 * (`runResult`); a front end that checked its call itself (the HTTP middleware) calls
 * the engine's checked run (`CHECKED_RUN`) and switches on the outcome.
 */

/** What identifies one call, so both modes accept and refuse exactly the same calls. */
export interface CallOptions {
  /**
   * Who the key belongs to (account, API key): from the server-side principal, never the
   * client. 1–1024 characters, without NUL, well-formed UTF-16 (no lone surrogate).
   */
  scope: string
  /** The caller's idempotency key: 1–255 visible ASCII characters. */
  key: string
  /** What identifies the request, as a precomputed fingerprint (see `fingerprintRequest`)... */
  fingerprint?: string
  /** ...or as JSON data, canonicalised and hashed (a Map, a Set, a class instance without `toJSON`… is refused). One of the two is required. */
  input?: unknown
  /** Overrides the engine's `ttlMs` for this call. */
  ttlMs?: number
  /** Overrides the engine's `waitMs` for this call. */
  waitMs?: number
  /** Overrides the engine's `deadlineMs` for this call: how long its function may hold the key. */
  deadlineMs?: number
}

/** The call's fingerprint: the given one, or the hash of `input`. */
export function fingerprintOf(options: { fingerprint?: string | undefined; input?: unknown }): string {
  if (options.fingerprint !== undefined) {
    if (typeof options.fingerprint !== 'string' || options.fingerprint.length === 0) {
      throw new InvalidOptionError('run: option "fingerprint" must be a non-empty string')
    }
    return options.fingerprint
  }
  if (!('input' in options)) {
    throw new InvalidOptionError('run: pass "input" (JSON data) or "fingerprint" to identify the request')
  }
  return fingerprintInput(options.input, 'run: option "input"', 'input')
}

/**
 * A call checked once, every setting resolved: what an engine's checked run takes and
 * checks no further. Its scope and key are typed as checked (`core/identity.ts`); its
 * durations are whole milliseconds within `MAX_DURATION_MS`, checked where they were set.
 */
export interface CheckedCall {
  readonly scope: CheckedScope
  readonly key: CheckedKey
  /** A non-empty fingerprint of the call's request. */
  readonly fingerprint: string
  readonly ttlMs: number
  readonly waitMs: number
  readonly deadlineMs: number
}

/**
 * Checks a public call before anything touches the store, and fills in the engine's defaults.
 * @param known the names the engine's call options may have (`CallOptions`' and its own)
 * @throws InvalidOptionError / InvalidKeyError naming what is wrong
 */
export function resolveCall(options: CallOptions, defaults: { ttlMs: number; waitMs: number; deadlineMs: number }, known: KnownOptions): CheckedCall {
  assertKnownOptions('run', options, known)
  const scope = checkedScope(options.scope)
  const key = checkedKey(options.key)
  const fingerprint = fingerprintOf(options)
  const ttlMs = options.ttlMs ?? defaults.ttlMs
  const waitMs = options.waitMs ?? defaults.waitMs
  const deadlineMs = options.deadlineMs ?? defaults.deadlineMs
  assertDuration('run: option "ttlMs"', ttlMs, 1)
  assertDuration('run: option "waitMs"', waitMs, 0)
  assertDuration('run: option "deadlineMs"', deadlineMs, 1)
  return { scope, key, fingerprint, ttlMs, waitMs, deadlineMs }
}

/**
 * What a checked call's function hands the engine: the outcome to store (its JSON text,
 * which the front end made: `serializeOutcome`'s, or a form of its own it knows is JSON),
 * or nothing to store (the effects roll back, or the claim is handled as after an error).
 * `value` is the front end's own, handed back in the call's outcome.
 */
export type Returned<V> = { readonly kind: 'store'; readonly outcome: string; readonly value: V } | { readonly kind: 'discard'; readonly value: V }

/** A checked call's function: what it returns, now or as a promise. */
export type CheckedFunction<Tx, V> = (tx: Tx) => Returned<V> | Promise<Returned<V>>

/**
 * What a checked call comes to, in one value: `fresh` (the function ran and its outcome
 * is stored), `not-stored` (it ran and discarded its outcome), `replayed` (an earlier
 * call's stored outcome, parsed; the function did not run) or `refused` (an error of
 * idem's with its `code`, and `retryAfterSeconds` where retrying later is the way out:
 * a mismatch, a call in flight, a store that failed, a deadline passed, a lease lost…).
 * What the function itself throws, other than an `IdemError`, is thrown.
 */
export type CallOutcome<V> =
  | { readonly kind: 'fresh'; readonly value: V; readonly outcome: string }
  | { readonly kind: 'not-stored'; readonly value: V }
  | { readonly kind: 'replayed'; readonly value: unknown }
  | { readonly kind: 'refused'; readonly error: IdemError }

/** An engine's checked run: a call checked once by a front end, one outcome back. */
export type CheckedRun<Tx> = <V>(call: CheckedCall, fn: CheckedFunction<Tx, V>) => Promise<CallOutcome<V>>

/**
 * The key under which both engines (`createIdem`, `createLeasedIdem`) carry their checked
 * run, for idem's own front ends; not a public export of the package.
 */
export const CHECKED_RUN: unique symbol = Symbol('idem.checkedRun')

/** A public call's function: its value, or `discard(value)`, now or as a promise. */
export type CallFunction<Tx, T> = (tx: Tx) => T | Discarded<T> | Promise<T | Discarded<T>>

/**
 * A public call's function as a checked call's: what it returns serialised for storing
 * (JSON data only, `serializeOutcome`), or discarded. A function that returned a value
 * (not a promise) is still done when this returns.
 */
export function serialisedFunction<Tx, T>(fn: CallFunction<Tx, T>): CheckedFunction<Tx, T> {
  return (tx) => {
    const returned = fn(tx)
    return isThenable(returned) ? Promise.resolve(returned).then(serialised) : serialised(returned)
  }
}

function serialised<T>(value: T | Discarded<T>): Returned<T> {
  return isDiscarded(value) ? { kind: 'discard', value: value.value } : { kind: 'store', outcome: serializeOutcome(value), value }
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
 * The public `run`'s result of a call's outcome, or its error.
 * @throws the refused call's error
 */
export function runResult<T>(outcome: CallOutcome<T>): RunResult<T> {
  switch (outcome.kind) {
    case 'fresh':
      return new StoredResult<T>(outcome.outcome)
    case 'not-stored':
      return { value: outcome.value, replayed: false, stored: false }
    case 'replayed':
      // What the function stored is what its replays return: its parsed JSON form.
      return { value: outcome.value as T, replayed: true, stored: true }
    case 'refused':
      throw outcome.error
  }
}

/**
 * A fresh result, whose value is the stored JSON text, parsed only when read: a caller
 * that never reads it never pays for parsing back what was just serialised.
 */
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
  declare readonly replayed: false
  declare readonly stored: true
  readonly #outcome: string
  #parsed: { value: T } | undefined

  constructor(outcome: string) {
    Object.defineProperty(this, 'value', StoredResult.#value)
    this.replayed = false
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

/** Reports one call's outcome, timed from `started` (see `callReporter`). */
export type ReportCall = (kind: OutcomeKind, scope: string, started: number, error?: unknown) => void

/**
 * Reports each call's outcome to the event stream and to the engine's own `onOutcome`
 * hook, timing it from `started` (`performance.now()`). A throwing hook is ignored:
 * metrics must never change a call's outcome. Builds nothing when nobody listens; an
 * engine's fresh calls and replays check that themselves, so that they run none of it.
 */
export function callReporter(
  events: EventStream,
  onOutcome: ((event: OutcomeEvent) => void) | undefined,
  engine: CallEvent['engine'],
  store: string,
): ReportCall {
  return function report(kind: OutcomeKind, scope: string, started: number, error?: unknown): void {
    if (onOutcome === undefined && !events.listening) return
    const durationMs = performance.now() - started
    if (onOutcome !== undefined) {
      try {
        onOutcome({ kind, scope, store, durationMs, error })
      } catch {
        // ignored on purpose, see above
      }
    }
    if (events.listening) events.emit({ type: 'call', engine, kind, scope, store, durationMs, error })
  }
}
