import { DEFAULT_WAIT_MS } from '../core/engine.js'
import { DEFAULT_DEADLINE_MS, isThenable, withinDeadline } from '../core/deadline.js'
import { InvalidKeyError } from '../core/errors/invalid-key.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { OverranError } from '../core/errors/overran.js'
import { MissingKeyError } from '../core/errors/missing-key.js'
import { idemEvents, warn, type EventStream } from '../core/events.js'
import type { InboxEvent } from './events.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, optionNames } from '../core/validate.js'
import type { InboxClaim, InboxSession, InboxTable, PriorFailures, WithInboxTable } from '../ports/inbox-table.js'
import { messageKey, refusedMessageKey } from './message-key.js'
import { deadLetterPayload, errorText } from './payload.js'

/** 14 days: SQS's longest retention, so no broker redelivers a message after its id is forgotten. */
export const DEFAULT_INBOX_RETENTION_MS = 14 * 24 * 60 * 60 * 1000
/** Failed attempts (the handler threw) before a message becomes a dead letter. */
export const DEFAULT_MAX_ATTEMPTS = 5

/** A message as the inbox sees it: broker-neutral. */
export interface InboxMessage<Body = unknown> {
  /** The broker's id for the message, the same on every redelivery (absent if the broker has none). */
  id?: string | undefined
  /** The decoded content. */
  body: Body
  /** Deliveries so far, this one included (1 = first), when the broker counts them. */
  deliveryCount?: number | undefined
  /** The broker's "delivered before" flag, for brokers without a count. */
  redelivered?: boolean | undefined
}

/** What became of one delivery, and so what the caller does with it. */
export type ConsumeResult<T = unknown> =
  /** The handler ran and its effects committed with the message id: ack. `value` is what it returned (not stored). */
  | { readonly status: 'processed'; readonly key: string; readonly value: T }
  /** The id was already recorded (processed or dead-lettered before): ack without running anything. */
  | { readonly status: 'duplicate'; readonly key: string }
  /** Too many failed attempts: the message is in the dead letters with its last error, and recorded as done: ack. */
  | { readonly status: 'dead-lettered'; readonly key: string; readonly attempts: number; readonly error: string }
  /**
   * The handler threw (or still ran at `deadlineMs`: `error` is an `OverranError`); its
   * effects were rolled back and the attempt counted: redeliver after `attempts`' backoff.
   */
  | { readonly status: 'failed'; readonly key: string; readonly attempts: number; readonly error: unknown }
  /** Another delivery of the same message is being processed right now: redeliver later; nothing was counted. */
  | { readonly status: 'in-flight'; readonly key: string; readonly retryAfterMs: number }

/** What one `consume` call may set for itself, over the inbox's own settings. */
export interface ConsumeOptions {
  /**
   * How long this delivery's handler may hold its message, instead of the inbox's
   * `deadlineMs`: for a consumer whose time is bounded from outside (a Lambda
   * invocation's remaining time, a visibility timeout measured as the message arrived).
   */
  deadlineMs?: number
  /** How long this delivery waits for another delivery of the message that is being processed, instead of the inbox's `waitMs`. */
  waitMs?: number
}

/** Runs in the transaction that records the message; `key` is what it is recorded under (see `keyOf`). */
export type InboxHandler<Tx, Body, T> = (tx: Tx, message: InboxMessage<Body>, key: string) => T | Promise<T>

/** Something worth an operator's attention that is not an error. */
export interface InboxWarning {
  code: 'retention-shorter-than-redelivery-horizon'
  message: string
}

/** What `createInbox` takes: the store, the consumer name, retention, attempt limits, the message id and where to report. */
export interface InboxOptions<Tx, Body = unknown> {
  /**
   * Where message ids, failure counts and dead letters live: a store with an inbox
   * table (`postgresStore`, `sqliteStore`, `memoryStore`). Its ids commit in the same
   * transaction as the handler's effects.
   */
  store: WithInboxTable<Tx>
  /**
   * Who consumes: one name per logical consumer (`billing-worker`), shared by its
   * instances. Ids of different consumers never meet.
   */
  consumer: string
  /** How long a processed id is remembered. @default 14 days ({@link DEFAULT_INBOX_RETENTION_MS}) */
  retentionMs?: number
  /** The longest time after which the broker may still redeliver a message; a shorter `retentionMs` draws a warning. */
  redeliveryHorizonMs?: number
  /** Derives the id from the message's content, for brokers without stable ids or producers that resend. */
  idOf?: (message: InboxMessage<Body>) => string
  /** Failed attempts before a message is dead-lettered. @default 5 */
  maxAttempts?: number
  /**
   * Deliveries (by the broker's count) after which a message that never finished, with
   * no failure recorded (the process crashed or was killed each time), is dead-lettered
   * without running again. Set it well above `maxAttempts`: nacks for in-flight
   * duplicates or a store outage count too. @default 4 × maxAttempts
   */
  maxDeliveries?: number
  /** How long a duplicate delivery waits for the one being processed before `in-flight`. @default 5000 */
  waitMs?: number
  /**
   * How long the handler may hold its message (from when it starts). Past it the
   * transaction is rolled back, the attempt counts as failed (`OverranError`) and a
   * redelivery runs; what the handler writes later fails. A store that cannot end a
   * transaction under its handler (SQLite's one connection) keeps it until the handler
   * ends, and says so (an `overran-held` warning). Keep it below the broker's redelivery
   * timeout (visibility timeout, ack deadline). @default 300000 (5 minutes)
   */
  deadlineMs?: number
  /** Where the inbox reports each settled message, each dead letter and its warnings. @default the process-wide `idemEvents` */
  events?: EventStream
  /** Receives warnings; without it they go to the event stream, or to `console.warn` when nobody listens. */
  onWarning?: (warning: InboxWarning) => void
}

/** Records each message id once, in the transaction of its handler (see `createInbox`). */
export interface Inbox<Tx, Body = unknown> {
  readonly consumer: string
  readonly retentionMs: number
  readonly maxAttempts: number
  /** How long a duplicate delivery waits for the one being processed before `in-flight`. */
  readonly waitMs: number
  /**
   * Runs `handler` once per message id: in one transaction it records the id, runs the
   * handler (whose writes go through `tx`) and commits. A redelivery resolves as
   * `duplicate` without running the handler. Ack the message only after this resolves
   * with `processed`, `duplicate` or `dead-lettered`; on `failed` or `in-flight`,
   * have the broker redeliver it.
   *
   * @throws StoreUnavailableError / MigrationRequiredError when the store fails (nothing was counted: redeliver)
   */
  consume<T>(message: InboxMessage<Body>, handler: InboxHandler<Tx, Body, T>, options?: ConsumeOptions): Promise<ConsumeResult<T>>
  /**
   * The key a message is recorded under (after `idOf` and hashing of long ids).
   * @throws MissingKeyError when it has no id, InvalidKeyError when its id is not well-formed UTF-16
   */
  keyOf(message: InboxMessage<Body>): string
  /**
   * Tells the inbox how long the broker may redeliver (adapters call it with what they
   * know, e.g. SQS's retention period); warns once if `retentionMs` is shorter.
   */
  expectRedeliveryWithin(horizonMs: number, source?: string): void
}

// An in-flight duplicate is redelivered this much later: the holder is most likely done by then.
const IN_FLIGHT_RETRY_MS = 1_000

const CONSUME_OPTIONS = optionNames<ConsumeOptions>({ deadlineMs: true, waitMs: true })

const OPTIONS = optionNames<InboxOptions<unknown>>({
  store: true, consumer: true, retentionMs: true, redeliveryHorizonMs: true, idOf: true, maxAttempts: true, maxDeliveries: true, waitMs: true, deadlineMs: true, events: true, onWarning: true,
})

/**
 * Creates an idempotent consumer (the inbox pattern): each message's effects commit in
 * the same transaction as its id, so a redelivery after a crash, a lost ack or a
 * rebalance finds the id and is acknowledged without running again. Failures are
 * counted per message; after `maxAttempts` the message goes to the dead letters with
 * its last error, and the consumer goes on.
 *
 * @throws InvalidOptionError naming the option, at creation (also for a store without an inbox table)
 * @example
 * const inbox = createInbox({ store: postgresStore({ pool }), consumer: 'claims-intake' })
 * const result = await inbox.consume({ id: msg.properties.messageId, body }, async (tx) => {
 *   await tx.query('INSERT INTO claims (id, body) VALUES ($1, $2)', [body.claimId, body])
 * })
 * if (result.status === 'failed' || result.status === 'in-flight') channel.nack(msg)
 * else channel.ack(msg)
 * @see docs/queue.md
 */
export function createInbox<Tx, Body = unknown>(options: InboxOptions<Tx, Body>): Inbox<Tx, Body> {
  assertKnownOptions('createInbox', options, OPTIONS)
  const {
    store,
    consumer,
    retentionMs = DEFAULT_INBOX_RETENTION_MS,
    redeliveryHorizonMs,
    idOf,
    maxAttempts = DEFAULT_MAX_ATTEMPTS,
    maxDeliveries,
    waitMs = DEFAULT_WAIT_MS,
    deadlineMs = DEFAULT_DEADLINE_MS,
    events = idemEvents,
    onWarning,
  } = options
  const caller = 'createInbox'
  const table = inboxTableOf(store, caller)
  assertName(`${caller}: option "consumer"`, consumer)
  assertDuration(`${caller}: option "retentionMs"`, retentionMs, 1)
  if (redeliveryHorizonMs !== undefined) assertDuration(`${caller}: option "redeliveryHorizonMs"`, redeliveryHorizonMs, 0)
  if (idOf !== undefined && typeof idOf !== 'function') throw new InvalidOptionError(`${caller}: option "idOf" must be a function of the message`)
  assertCount(`${caller}: option "maxAttempts"`, maxAttempts, 1, 1_000)
  const deliveriesLimit = maxDeliveries ?? maxAttempts * 4
  assertCount(`${caller}: option "maxDeliveries"`, deliveriesLimit, maxAttempts, 100_000)
  assertDuration(`${caller}: option "waitMs"`, waitMs, 0)
  assertDuration(`${caller}: option "deadlineMs"`, deadlineMs, 1)
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError(`${caller}: option "events" must be an event stream (createEventStream())`)
  }
  if (onWarning !== undefined && typeof onWarning !== 'function') throw new InvalidOptionError(`${caller}: option "onWarning" must be a function`)
  let warned = false

  function expectRedeliveryWithin(horizonMs: number, source = 'the broker'): void {
    assertDuration('expectRedeliveryWithin: "horizonMs"', horizonMs, 0)
    if (warned || horizonMs <= retentionMs) return
    warned = true
    const warning: InboxWarning = {
      code: 'retention-shorter-than-redelivery-horizon',
      message:
        `idem inbox "${consumer}": retentionMs (${retentionMs} ms) is shorter than how long ${source} may redeliver a message ` +
        `(${horizonMs} ms); a message redelivered after its id is forgotten runs again. Raise retentionMs to at least ${horizonMs}.`,
    }
    try {
      if (onWarning !== undefined) onWarning(warning)
      else warn(events, { ...warning, source: caller })
    } catch {
      // A logging hook must not stop consumption.
    }
  }
  if (redeliveryHorizonMs !== undefined) expectRedeliveryWithin(redeliveryHorizonMs)

  function keyOf(message: InboxMessage<Body>): string {
    return messageKey(idOfMessage(message))
  }

  function idOfMessage(message: InboxMessage<Body>): string {
    let id: unknown
    if (idOf !== undefined) {
      try {
        id = idOf(message)
      } catch (cause) {
        throw new MissingKeyError(`inbox "${consumer}": idOf threw: ${(cause as Error)?.message ?? String(cause)}`, { cause })
      }
    } else {
      id = message?.id
    }
    if (typeof id !== 'string' || id.length === 0) {
      throw new MissingKeyError(
        `inbox "${consumer}": the message has no id${idOf === undefined ? '; have the producer set one (e.g. AMQP messageId) or pass "idOf"' : ' (idOf returned none)'}`,
      )
    }
    return id
  }

  /** Claims the message; a stale snapshot gets one fresh transaction, as in the engine. */
  async function claim(key: string): Promise<InboxSession<Tx>> {
    const request: InboxClaim = { consumer, key, waitMs, retentionMs }
    const session = await table.begin(request)
    return session.state === 'stale' ? await table.begin(request) : session
  }

  function report<R extends ConsumeResult<unknown>>(result: R, started: number, error?: unknown): R {
    if (events.listening) {
      const event: InboxEvent = { type: 'inbox', consumer, status: result.status, durationMs: performance.now() - started }
      if ('attempts' in result) event.attempts = result.attempts
      if (error !== undefined) event.error = error
      events.emit(event)
      if (result.status === 'dead-lettered') {
        events.emit({ type: 'dead-letter', source: 'inbox', name: consumer, key: result.key, attempts: result.attempts, error: result.error })
      }
    }
    return result
  }

  async function consume<T>(message: InboxMessage<Body>, handler: InboxHandler<Tx, Body, T>, options?: ConsumeOptions): Promise<ConsumeResult<T>> {
    if (typeof handler !== 'function') throw new InvalidOptionError('consume: "handler" must be a function (tx, message) => …')
    let heldFor = deadlineMs
    let waitFor = waitMs
    if (options !== undefined) {
      assertKnownOptions('consume', options, CONSUME_OPTIONS)
      if (options.deadlineMs !== undefined) {
        assertDuration('consume: option "deadlineMs"', options.deadlineMs, 1)
        heldFor = options.deadlineMs
      }
      if (options.waitMs !== undefined) {
        assertDuration('consume: option "waitMs"', options.waitMs, 0)
        waitFor = options.waitMs
      }
    }
    const started = performance.now()
    let id: string
    try {
      id = idOfMessage(message)
    } catch (error) {
      // A message that cannot be keyed can never be deduplicated: it is poison.
      if (!(error instanceof MissingKeyError)) throw error
      return report(await unkeyed<T>(message, error), started)
    }
    let key: string
    try {
      key = messageKey(id)
    } catch (error) {
      if (!(error instanceof InvalidKeyError)) throw error
      // Refused, never folded into another id's key: dead-lettered under a key of its own.
      return report(await deadLetter<T>(refusedMessageKey(id), message, 1, errorText(error)), started)
    }
    let session: InboxSession<Tx>
    try {
      // As `claim`, spelled out: one async layer less on every message.
      const request: InboxClaim = { consumer, key, waitMs: waitFor, retentionMs }
      session = await table.begin(request)
      if (session.state === 'stale') session = await table.begin(request)
    } catch (error) {
      if (events.listening) events.emit({ type: 'inbox', consumer, status: 'error', durationMs: performance.now() - started, error })
      throw error
    }
    if (session.state === 'processed') return report({ status: 'duplicate', key }, started)
    if (session.state !== 'new') return report({ status: 'in-flight', key, retryAfterMs: IN_FLIGHT_RETRY_MS }, started)

    // A first delivery cannot have failed before: skip the failure lookup (the hot path).
    const first = message.deliveryCount === 1 || (message.deliveryCount === undefined && message.redelivered === false)
    if (!first) {
      const prior = await inSession(session, () => session.takeFailures())
      const given = givenUp(prior, message)
      if (given !== undefined) {
        await inSession(session, async () => {
          await session.deadLetter({ payload: deadLetterPayload(message?.body), attempts: given.attempts, error: given.error, firstSeenAt: prior?.firstFailedAt })
          await session.commit()
        })
        return report({ status: 'dead-lettered', key, ...given }, started)
      }
    }
    let value: T
    let overran: OverranError | undefined
    try {
      const running = handler(session.tx, message, key)
      value = isThenable(running)
        ? await withinDeadline(running, heldFor, () => {
            const abandon = overrun(session, key, heldFor)
            return abandon && abandon.then((error) => (overran = error))
          })
        : await running
    } catch (error) {
      if (overran !== undefined && error === overran) return report(await failed<T>(key, message, overran), started, overran)
      await session.rollback()
      // The handler failed because the store's connection died: nothing was committed,
      // and it is the store's failure, not the message's.
      const lost = session.lost?.()
      if (lost !== undefined) throw lost
      return report(await failed<T>(key, message, error), started, error)
    }
    await session.commit()
    return report({ status: 'processed', key, value }, started)
  }

  /**
   * The deadline passed with the handler still running: the session is abandoned and the
   * attempt fails, or, where the store cannot end it under the handler (SQLite), it stays
   * until the handler ends. Either way the log says which message overran.
   */
  function overrun(session: InboxSession<Tx>, key: string, heldFor: number): Promise<OverranError> | undefined {
    const held = `idem inbox "${consumer}": the handler of message ${JSON.stringify(key)} still runs ${heldFor} ms after it took the message (deadlineMs)`
    if (session.abandon === undefined) {
      warn(events, { code: 'overran-held', source: caller, message: `${held}; the store cannot end its transaction while it runs, so the message stays held until it ends` })
      return undefined
    }
    return session.abandon().then(() => {
      const error = new OverranError(`${held}: its transaction was rolled back; the attempt counts as failed`)
      warn(events, { code: 'handler-overran', source: caller, message: error.message })
      return error
    })
  }

  /** Too many failed attempts, or too many deliveries that never finished: why the message is given up on. */
  function givenUp(prior: PriorFailures | undefined, message: InboxMessage<Body>): { attempts: number; error: string } | undefined {
    const failures = prior?.attempts ?? 0
    const deliveries = (message.deliveryCount ?? 1) - 1
    if (failures < maxAttempts && deliveries < deliveriesLimit) return undefined
    const error =
      failures >= maxAttempts
        ? prior!.lastError
        : `delivered ${deliveries} times without finishing (the consumer crashed or timed out each time); last error: ${prior?.lastError ?? 'none recorded'}`
    return { attempts: Math.max(failures, deliveries), error }
  }

  async function failed<T>(key: string, message: InboxMessage<Body>, error: unknown): Promise<ConsumeResult<T>> {
    const text = errorText(error)
    const attempts = await table.recordFailure(consumer, key, text)
    if (attempts < maxAttempts) return { status: 'failed', key, attempts, error }
    return deadLetter(key, message, attempts, text)
  }

  /** Records the message as done and keeps it as a dead letter, in a transaction of its own. */
  async function deadLetter<T>(key: string, message: InboxMessage<Body>, attempts: number, error: string): Promise<ConsumeResult<T>> {
    const session = await claim(key)
    // Another delivery processed it meanwhile: that outcome stands.
    if (session.state === 'processed') return { status: 'duplicate', key }
    if (session.state !== 'new') return { status: 'in-flight', key, retryAfterMs: IN_FLIGHT_RETRY_MS }
    await inSession(session, async () => {
      const prior = await session.takeFailures()
      await session.deadLetter({ payload: deadLetterPayload(message?.body), attempts, error, firstSeenAt: prior?.firstFailedAt })
      await session.commit()
    })
    return { status: 'dead-lettered', key, attempts, error }
  }

  async function unkeyed<T>(message: InboxMessage<Body>, error: MissingKeyError): Promise<ConsumeResult<T>> {
    // Recorded under a key derived from the content, so redeliveries of the same bytes
    // land on the same dead letter instead of piling up.
    const key = messageKey(`unkeyed:${deadLetterPayload(message?.body)}`)
    return deadLetter(key, message, 1, errorText(error))
  }

  return { consumer, retentionMs, maxAttempts, waitMs, consume, keyOf, expectRedeliveryWithin }
}

/** Runs the inbox's own statements in a session: on failure it is rolled back, and a lost connection is the error. */
async function inSession<Tx, T>(session: InboxSession<Tx>, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    await session.rollback()
    throw session.lost?.() ?? error
  }
}

function inboxTableOf<Tx>(store: WithInboxTable<Tx> | undefined, caller: string): InboxTable<Tx> {
  if (store === null || typeof store !== 'object') {
    throw new InvalidOptionError(`${caller}: pass "store", a store with an inbox table: postgresStore(...), sqliteStore(...) or memoryStore()`)
  }
  const table = (store as Partial<WithInboxTable<Tx>>).inbox
  if (table === null || typeof table !== 'object' || typeof table.begin !== 'function' || typeof table.recordFailure !== 'function') {
    const name = typeof store.name === 'string' ? ` ("${store.name}")` : ''
    throw new InvalidOptionError(
      `${caller}: option "store"${name} has no inbox table, so it is not from postgresStore, sqliteStore or memoryStore: ` +
        'the inbox needs a postgres, sqlite or memory store, which keeps message ids with the handler\'s effects',
    )
  }
  return table
}
