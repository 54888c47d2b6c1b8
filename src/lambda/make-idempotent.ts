import type { Context } from 'aws-lambda'
import type { OutcomeEvent } from '../core/engine.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { MissingKeyError } from '../core/errors/missing-key.js'
import type { EventStream } from '../core/events.js'
import type { CallOptions } from '../core/call.js'
import { fingerprintInput } from '../core/json-data.js'
import type { Discarded } from '../core/result.js'
import { assertDuration, assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import { messageKey } from '../queue/message-key.js'
import { engineOf, type LambdaEngine, type StoreOf } from './engine.js'
import { DEFAULT_MARGIN_MS, timeLeft } from './invocation.js'

/**
 * A function made idempotent: Lambda's handler with, as third argument, the engine's
 * transaction (`createIdem`, e.g. a Postgres client: write the effect through it, so it
 * commits with the key) or step context (`createLeasedIdem`: `ctx.step`, `ctx.derive`).
 */
export type IdempotentFunction<Event, Result, Tx> = (event: Event, context: Context, tx: Tx) => Result | Discarded<Result> | Promise<Result | Discarded<Result>>

/** What `makeIdempotent` and `middyIdempotent` take: the engine or store, and how an event names its key, scope and payload. */
export interface MakeIdempotentOptions<Event, Tx> {
  /** Where keys and outcomes live: a key store (`postgresStore`) or a leased one (`dynamodbStore`, `redisStore`). Give this or `idem`. */
  store?: StoreOf<Tx>
  /**
   * An engine (`createIdem(...)`, `createLeasedIdem(...)`), to share one with other front
   * ends or to set its lease. Give this or `store`. What you set here wins; what you set
   * explicitly on the engine comes next; the engine's defaults after that.
   */
  idem?: LambdaEngine<Tx>
  /**
   * The event's idempotency key, the same on every delivery of the event (any string:
   * one that is not 1–255 visible ASCII is hashed). No key is `MissingKeyError`.
   * @default the event's `id` (EventBridge, scheduled events), or the SNS message id of an SNS event
   */
  key?: (event: Event, context: Context) => string | undefined
  /**
   * What must be the same for two events with one key to be the same request: another
   * payload under a used key is `FingerprintMismatchError` (HTTP's 422). JSON data: a
   * payload that holds a Map, a Set, a class instance… is `InvalidOptionError`.
   * @default the whole event
   */
  input?: (event: Event) => unknown
  /**
   * Whose key space the key is in: a name, or a function of the event. Two functions that
   * share a table and a scope share keys.
   * @default the function's name (`context.functionName`)
   */
  scope?: string | ((event: Event, context: Context) => string)
  /** How long an outcome is kept; an event redelivered after it runs again. @default the engine's explicit `ttlMs`, else 24 h */
  ttlMs?: number
  /**
   * How long a duplicate invocation waits for the first one before `InFlightError` (it
   * then replays the first one's outcome); never past its own deadline.
   * @default the engine's explicit `waitMs`, else 5 s
   */
  waitMs?: number
  /**
   * How long the function may hold its key, at most. The invocation's own time bounds it
   * always: `context.getRemainingTimeInMillis()` less `marginMs`.
   * @default the engine's explicit `deadlineMs`; else only the invocation's time
   */
  deadlineMs?: number
  /**
   * Time kept back from the function at the end of the invocation, for idem to let go of
   * the key (roll back or release) and return before Lambda stops the invocation.
   * @default 1000 ({@link DEFAULT_MARGIN_MS})
   */
  marginMs?: number
  /** Called once per invocation with the engine's outcome (only with `store`; an engine has its own). */
  onOutcome?: (event: OutcomeEvent) => void
  /** Where the engine made on `store` reports (only with `store`). @default the process-wide `idemEvents` */
  events?: EventStream
}

/** The options of a Lambda front end, checked, with the engine made. */
export interface LambdaCalls<Event, Tx> {
  readonly engine: LambdaEngine<Tx>
  /** The engine call for one invocation: scope, key, fingerprint input and the invocation's time. */
  callFor(event: Event, context: Context): CallOptions
}

const OPTIONS = optionNames<MakeIdempotentOptions<unknown, unknown>>({
  store: true, idem: true, key: true, input: true, scope: true, ttlMs: true, waitMs: true, deadlineMs: true, marginMs: true, onOutcome: true, events: true,
})

/** 5 s, as a direct engine call: a duplicate invocation waits that long for the first one's outcome. */
const DEFAULT_LAMBDA_WAIT_MS = 5_000

/**
 * Checks the options of `makeIdempotent` or `middyIdempotent` (named `caller` in errors)
 * and returns how to make each invocation's engine call.
 * @throws InvalidOptionError naming the option
 */
export function lambdaCalls<Event, Tx>(caller: string, options: MakeIdempotentOptions<Event, Tx>): LambdaCalls<Event, Tx> {
  assertKnownOptions(caller, options, OPTIONS)
  const { store, idem, key = defaultKey, input = wholeEvent, scope, ttlMs, waitMs, deadlineMs, marginMs = DEFAULT_MARGIN_MS, onOutcome, events } = options
  const fail = (option: string, why: string): never => {
    throw new InvalidOptionError(`${caller}: option "${option}" ${why}`)
  }
  if (typeof key !== 'function') fail('key', 'must be a function (event, context) => string')
  if (typeof input !== 'function') fail('input', 'must be a function (event) => the payload that must match (any JSON value)')
  if (scope !== undefined && typeof scope !== 'function' && (typeof scope !== 'string' || scope.length === 0)) {
    fail('scope', 'must be a non-empty string or a function (event, context) => string')
  }
  if (ttlMs !== undefined) assertDuration(`${caller}: option "ttlMs"`, ttlMs, 1)
  if (waitMs !== undefined) assertDuration(`${caller}: option "waitMs"`, waitMs, 0)
  if (deadlineMs !== undefined) assertDuration(`${caller}: option "deadlineMs"`, deadlineMs, 1)
  assertDuration(`${caller}: option "marginMs"`, marginMs, 0)
  if (onOutcome !== undefined && typeof onOutcome !== 'function') fail('onOutcome', 'must be a function')
  const engine = engineOf(caller, store, idem, onOutcome, events)
  // The precedence rule: this front end's setting, then the engine's explicit one, then the default.
  const callTtl = ttlMs ?? engine.settings?.ttlMs
  const callWait = waitMs ?? engine.settings?.waitMs ?? DEFAULT_LAMBDA_WAIT_MS
  const callDeadline = deadlineMs ?? engine.settings?.deadlineMs

  function scopeOf(event: Event, context: Context): string {
    if (typeof scope === 'string') return scope
    if (scope !== undefined) return scope(event, context)
    const name = context?.functionName
    if (typeof name !== 'string' || name.length === 0) fail('scope', 'is required when the context has no functionName (outside Lambda)')
    return name
  }

  function callFor(event: Event, context: Context): CallOptions {
    const id = key(event, context)
    if (typeof id !== 'string' || id.length === 0) {
      throw new MissingKeyError(
        `${caller}: the event has no idempotency key${options.key === undefined ? ' (no "id", and not an SNS event); pass key: (event) => …' : ' ("key" returned none)'}`,
      )
    }
    const left = timeLeft(context, marginMs, callDeadline, caller)
    return {
      scope: scopeOf(event, context),
      key: messageKey(id),
      // Hashed here, so a payload that is not JSON data is named as this option's.
      fingerprint: fingerprintInput(input(event), `${caller}: the payload (option "input")`, 'payload'),
      ttlMs: callTtl,
      waitMs: left === undefined ? callWait : Math.min(callWait, left),
      deadlineMs: left,
    }
  }

  return { engine, callFor }
}

/**
 * Makes a Lambda function idempotent: an event delivered again (EventBridge's and SNS's
 * retries, an async invocation retried, a client that invokes twice) returns the first
 * invocation's stored result without running the function. The function runs inside the
 * engine's call: on the transactional engine its writes through `tx` commit with the key,
 * or not at all; on the leased engine (DynamoDB, Redis) it holds a lease, and `tx` is the
 * step context. Whatever it throws propagates after the key is freed, so Lambda's retry
 * runs it again. The invocation's remaining time bounds the call: at
 * `getRemainingTimeInMillis() - marginMs` the transaction is rolled back (or the lease
 * released), the key freed, and the invocation fails with `OverranError`, so the retry
 * is not stuck behind a key that a timed-out invocation held.
 *
 * @throws InvalidOptionError naming the option, at creation
 * @example
 * export const handler = makeIdempotent(
 *   async (event: EventBridgeEvent<'Order Placed', { orderId: string }>, context, tx: PgClient) => {
 *     await tx.query('INSERT INTO shipments (order_id) VALUES ($1)', [event.detail.orderId])
 *     return { shipped: event.detail.orderId }
 *   },
 *   { store: postgresStore({ pool }) },
 * )
 * @see docs/lambda.md
 */
export function makeIdempotent<Event, Result, Tx>(
  fn: IdempotentFunction<Event, Result, Tx>,
  options: MakeIdempotentOptions<Event, Tx>,
): (event: Event, context: Context) => Promise<Result> {
  if (typeof fn !== 'function') throw new InvalidOptionError('makeIdempotent: the function to make idempotent must be a function (event, context, tx) => result')
  const { engine, callFor } = lambdaCalls('makeIdempotent', options)
  return async function idempotentHandler(event: Event, context: Context): Promise<Result> {
    const { value } = await engine.run<Result>(callFor(event, context), (tx) => fn(event, context, tx))
    return value
  }
}

/** The key an event names itself by: `id` (EventBridge, scheduled events), or the message id of the one record of an SNS event. */
function defaultKey(event: unknown): string | undefined {
  if (event === null || typeof event !== 'object') return undefined
  if ('id' in event && typeof event.id === 'string') return event.id
  if ('Records' in event && Array.isArray(event.Records) && event.Records.length === 1) {
    const [record] = event.Records as unknown[]
    if (record !== null && typeof record === 'object' && 'Sns' in record && record.Sns !== null && typeof record.Sns === 'object' && 'MessageId' in record.Sns) {
      const id = record.Sns.MessageId
      if (typeof id === 'string') return id
    }
  }
  return undefined
}

function wholeEvent(event: unknown): unknown {
  return event
}
