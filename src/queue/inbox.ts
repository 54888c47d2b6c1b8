import { createIdem, DEFAULT_WAIT_MS, type Idem } from '../core/engine.js'
import { FingerprintMismatchError } from '../core/errors/fingerprint-mismatch.js'
import { InFlightError } from '../core/errors/in-flight.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { MissingKeyError } from '../core/errors/missing-key.js'
import type { Store } from '../core/store.js'
import { assertCount, assertDuration, assertName } from '../core/validate.js'
import { inboxBackend, type InboxBackend, type PriorFailures } from './inbox-backend.js'
import { messageKey } from './message-key.js'
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
  /** The handler threw; its effects were rolled back and the attempt counted: redeliver after `attempts`' backoff. */
  | { readonly status: 'failed'; readonly key: string; readonly attempts: number; readonly error: unknown }
  /** Another delivery of the same message is being processed right now: redeliver later; nothing was counted. */
  | { readonly status: 'in-flight'; readonly key: string; readonly retryAfterMs: number }

/** Runs in the transaction that records the message; `key` is what it is recorded under (see `keyOf`). */
export type InboxHandler<Tx, Body, T> = (tx: Tx, message: InboxMessage<Body>, key: string) => T | Promise<T>

/** Something worth an operator's attention that is not an error. */
export interface InboxWarning {
  code: 'retention-shorter-than-redelivery-horizon'
  message: string
}

export interface InboxOptions<Tx, Body = unknown> {
  /** The engine to run on; or pass `store`. Its store must be postgres, sqlite or memory. */
  idem?: Idem<Tx>
  /** The key store, when no engine is passed. */
  store?: Store<Tx>
  /**
   * Who consumes: one name per logical consumer (`billing-worker`), shared by its
   * instances. On Postgres its ids are rows of `idem_inbox` under this name; on SQLite
   * and in memory, keys under scope `inbox:<consumer>`.
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
  /** Receives warnings; without it they go to `console.warn`. */
  onWarning?: (warning: InboxWarning) => void
}

export interface Inbox<Tx, Body = unknown> {
  readonly consumer: string
  readonly retentionMs: number
  readonly maxAttempts: number
  /**
   * Runs `handler` once per message id: in one transaction it records the id, runs the
   * handler (whose writes go through `tx`) and commits. A redelivery resolves as
   * `duplicate` without running the handler. Ack the message only after this resolves
   * with `processed`, `duplicate` or `dead-lettered`; on `failed` or `in-flight`,
   * have the broker redeliver it.
   *
   * @throws StoreUnavailableError / MigrationRequiredError when the store fails (nothing was counted: redeliver)
   */
  consume<T>(message: InboxMessage<Body>, handler: InboxHandler<Tx, Body, T>): Promise<ConsumeResult<T>>
  /** The engine key a message is recorded under (after `idOf` and hashing of long ids). */
  keyOf(message: InboxMessage<Body>): string
  /**
   * Tells the inbox how long the broker may redeliver (adapters call it with what they
   * know, e.g. SQS's retention period); warns once if `retentionMs` is shorter.
   */
  expectRedeliveryWithin(horizonMs: number, source?: string): void
}

// Any redelivery of the same id is the same message, whatever its content says: the
// fingerprint is constant, and the body is never hashed on the hot path.
const FINGERPRINT = 'idem-inbox-v1'
// The inbox never reads a stored outcome (a replay is a duplicate, whatever it returned),
// so its calls keep none (`storeOutcome: false`): the Postgres store then writes the key
// with the claim, the cheapest way it can.

/**
 * What the engine stores as a message's outcome. The handler's return value is handed
 * back to the caller but not stored: a redelivery needs only "done", and a handler
 * returning a driver result (not JSON) must not fail the message.
 */
type Recorded = { processed: true } | { deadLettered: string; attempts: number }

/** A handler's own error, carried through the engine so it is not mistaken for the engine's. */
class HandlerFailure {
  constructor(readonly error: unknown) {}
}

/**
 * Creates an idempotent consumer (the inbox pattern) on the engine: each message's
 * effects commit in the same transaction as its id, so a redelivery after a crash, a
 * lost ack or a rebalance finds the id and is acknowledged without running again.
 * Failures are counted per message; after `maxAttempts` the message goes to the dead
 * letters with its last error, and the consumer goes on.
 *
 * @throws InvalidOptionError naming the option, at creation
 * @example
 * const inbox = createInbox({ store: postgresStore({ pool }), consumer: 'claims-intake' })
 * const result = await inbox.consume({ id: msg.properties.messageId, body }, async (tx) => {
 *   await tx.query('INSERT INTO claims (id, body) VALUES ($1, $2)', [body.claimId, body])
 * })
 * if (result.status === 'failed' || result.status === 'in-flight') channel.nack(msg)
 * else channel.ack(msg)
 * @see docs/queue.md
 */
export function createInbox<Tx, Body = unknown>({
  idem,
  store,
  consumer,
  retentionMs = DEFAULT_INBOX_RETENTION_MS,
  redeliveryHorizonMs,
  idOf,
  maxAttempts = DEFAULT_MAX_ATTEMPTS,
  maxDeliveries,
  waitMs = DEFAULT_WAIT_MS,
  onWarning,
}: InboxOptions<Tx, Body>): Inbox<Tx, Body> {
  const caller = 'createInbox'
  if (idem !== undefined && store !== undefined && idem.store !== store) {
    throw new InvalidOptionError(`${caller}: pass "idem" or "store", not both`)
  }
  if (idem !== undefined && (idem === null || typeof idem !== 'object' || typeof idem.run !== 'function')) {
    throw new InvalidOptionError(`${caller}: option "idem" must be an engine from createIdem(...)`)
  }
  const engine: Idem<Tx> = idem ?? (store === undefined ? missingStore(caller) : createIdem({ store }))
  const backend: InboxBackend<Tx> = inboxBackend(engine.store, caller)
  assertName(`${caller}: option "consumer"`, consumer)
  assertDuration(`${caller}: option "retentionMs"`, retentionMs, 1)
  if (redeliveryHorizonMs !== undefined) assertDuration(`${caller}: option "redeliveryHorizonMs"`, redeliveryHorizonMs, 0)
  if (idOf !== undefined && typeof idOf !== 'function') throw new InvalidOptionError(`${caller}: option "idOf" must be a function of the message`)
  assertCount(`${caller}: option "maxAttempts"`, maxAttempts, 1, 1_000)
  const deliveriesLimit = maxDeliveries ?? maxAttempts * 4
  assertCount(`${caller}: option "maxDeliveries"`, deliveriesLimit, maxAttempts, 100_000)
  assertDuration(`${caller}: option "waitMs"`, waitMs, 0)
  if (onWarning !== undefined && typeof onWarning !== 'function') throw new InvalidOptionError(`${caller}: option "onWarning" must be a function`)

  // Message ids go to the store's id table where it has one (Postgres), else to its key table.
  const ids = backend.ids === undefined ? engine : engine.withStore(backend.ids)
  const scope = backend.ids === undefined ? `inbox:${consumer}` : consumer
  const failureScope = `inbox-failures:${consumer}`
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
      else console.warn(warning.message)
    } catch {
      // A logging hook must not stop consumption.
    }
  }
  if (redeliveryHorizonMs !== undefined) expectRedeliveryWithin(redeliveryHorizonMs)

  function keyOf(message: InboxMessage<Body>): string {
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
    return messageKey(id)
  }

  // Counts a failure in a short transaction of its own (the handler's was rolled back).
  // It runs through the engine so it takes the store's usual path (SQLite's single
  // writer, Postgres's pool); the key serialises failures of the same message and
  // expires at once, leaving one expired key row per failing message for prune().
  async function recordFailure(key: string, error: string): Promise<number> {
    for (let tries = 0; ; tries++) {
      const result = await engine.run({ scope: failureScope, key, fingerprint: FINGERPRINT, ttlMs: 1, waitMs, storeOutcome: false }, (tx) =>
        backend.recordFailure(tx, consumer, key, error),
      )
      // Replayed: the previous failure's record had not yet expired (same millisecond).
      if (!result.replayed) return result.value
      if (tries >= 20) throw new InFlightError(`inbox "${consumer}": could not count a failure of message ${key}`)
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  }

  async function deadLetter(
    key: string,
    message: InboxMessage<Body>,
    attempts: number,
    error: string,
    firstSeenAt: Date | undefined,
    tx?: Tx,
  ): Promise<boolean> {
    const write = async (t: Tx): Promise<Recorded> => {
      await backend.deadLetter(t, { consumer, key, payload: deadLetterPayload(message?.body), attempts, error, firstSeenAt })
      return { deadLettered: error, attempts }
    }
    if (tx !== undefined) {
      await write(tx)
      return true
    }
    const result = await ids.run({ scope, key, fingerprint: FINGERPRINT, ttlMs: retentionMs, waitMs, storeOutcome: false }, async (t) => {
      await backend.takeFailures(t, consumer, key)
      return write(t)
    })
    return !result.replayed
  }

  async function consume<T>(message: InboxMessage<Body>, handler: InboxHandler<Tx, Body, T>): Promise<ConsumeResult<T>> {
    if (typeof handler !== 'function') throw new InvalidOptionError('consume: "handler" must be a function (tx, message) => …')
    let key: string
    try {
      key = keyOf(message)
    } catch (error) {
      // A message that cannot be keyed can never be deduplicated: it is poison.
      if (!(error instanceof MissingKeyError)) throw error
      return unkeyed(message, error)
    }
    // A first delivery cannot have failed before: skip the failure lookup (the hot path).
    const first = message.deliveryCount === 1 || (message.deliveryCount === undefined && message.redelivered === false)
    let result
    let value: T | undefined
    try {
      result = await ids.run<Recorded>({ scope, key, fingerprint: FINGERPRINT, ttlMs: retentionMs, waitMs, storeOutcome: false }, async (tx) => {
        if (!first) {
          const prior: PriorFailures | undefined = await backend.takeFailures(tx, consumer, key)
          const failures = prior?.attempts ?? 0
          const deliveries = (message.deliveryCount ?? 1) - 1
          if (failures >= maxAttempts || deliveries >= deliveriesLimit) {
            const error =
              failures >= maxAttempts
                ? prior!.lastError
                : `delivered ${deliveries} times without finishing (the consumer crashed or timed out each time); last error: ${prior?.lastError ?? 'none recorded'}`
            const attempts = Math.max(failures, deliveries)
            await deadLetter(key, message, attempts, error, prior?.firstFailedAt, tx)
            return { deadLettered: error, attempts }
          }
        }
        try {
          value = await handler(tx, message, key)
        } catch (error) {
          throw new HandlerFailure(error)
        }
        return { processed: true }
      })
    } catch (thrown) {
      if (thrown instanceof InFlightError) return { status: 'in-flight', key, retryAfterMs: (thrown.retryAfterSeconds ?? 1) * 1000 }
      if (thrown instanceof FingerprintMismatchError) return { status: 'duplicate', key }
      if (!(thrown instanceof HandlerFailure)) throw thrown
      return failed(key, message, thrown.error)
    }
    if (result.replayed) return { status: 'duplicate', key }
    const outcome = result.value
    if ('deadLettered' in outcome) return { status: 'dead-lettered', key, attempts: outcome.attempts, error: outcome.deadLettered }
    return { status: 'processed', key, value: value as T }
  }

  async function failed<T>(key: string, message: InboxMessage<Body>, error: unknown): Promise<ConsumeResult<T>> {
    const text = errorText(error)
    const attempts = await recordFailure(key, text)
    if (attempts < maxAttempts) return { status: 'failed', key, attempts, error }
    const wrote = await deadLetter(key, message, attempts, text, undefined)
    // Another delivery processed it meanwhile: that outcome stands.
    if (!wrote) return { status: 'duplicate', key }
    return { status: 'dead-lettered', key, attempts, error: text }
  }

  async function unkeyed<T>(message: InboxMessage<Body>, error: MissingKeyError): Promise<ConsumeResult<T>> {
    // Recorded under a key derived from the content, so redeliveries of the same bytes
    // land on the same dead letter instead of piling up.
    const key = messageKey(`unkeyed:${deadLetterPayload(message?.body)}`)
    await deadLetter(key, message, 1, errorText(error), undefined)
    return { status: 'dead-lettered', key, attempts: 1, error: errorText(error) }
  }

  return { consumer, retentionMs, maxAttempts, consume, keyOf, expectRedeliveryWithin }
}

function missingStore(caller: string): never {
  throw new InvalidOptionError(`${caller}: pass "store" (e.g. postgresStore({ pool })) or "idem" (an engine from createIdem)`)
}
