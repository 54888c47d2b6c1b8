import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { backoffDelay, type Backoff } from '../core/backoff.js'
import { assertDuration, assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import type { ConsumeResult, Inbox, InboxMessage } from './inbox.js'
import type { Delivery, MessageSource, Subscription } from './source.js'

/** What a consumer's handler gets besides the transaction. */
export interface ConsumedMessage<Body> extends InboxMessage<Body> {
  /** The inbox key the message was recorded under. */
  readonly key: string
  /** The broker delivery, for headers and metadata. Do not settle it yourself. */
  readonly delivery: Delivery
}

/** What `consume` takes: the inbox, the broker source, the handler, decoding and retry. */
export interface ConsumerOptions<Tx, Body> {
  inbox: Inbox<Tx, Body>
  source: MessageSource
  /** Runs once per message id, in the transaction that records it. Throw to retry. */
  handler: (tx: Tx, message: ConsumedMessage<Body>) => unknown
  /** Turns the raw bytes into the body. A decoding error counts as a failed attempt. @default JSON of UTF-8 */
  decode?: (data: Uint8Array) => Body
  /** Redelivery delay after a failed attempt. @default { baseMs: 1000, maxMs: 60000 } */
  retry?: Backoff
  /** Called after each message is settled, for metrics and logs. Must not throw. */
  onSettled?: (result: ConsumeResult | { status: 'error'; error: unknown }, delivery: Delivery) => void
  /** How long to wait before redelivery when the store itself failed. @default 1000 */
  storeRetryMs?: number
}

/** A running consumer (see `consume`). */
export interface Consumer {
  /** Stops taking messages and waits for those in progress. */
  stop(): Promise<void>
}

const utf8 = new TextDecoder()
const decodeJson = (data: Uint8Array): never => JSON.parse(utf8.decode(data)) as never

const OPTIONS = optionNames<ConsumerOptions<unknown, unknown>>({ inbox: true, source: true, handler: true, decode: true, retry: true, onSettled: true, storeRetryMs: true })

/**
 * Connects a broker adapter to an inbox: each delivery is decoded and consumed
 * through the inbox, then settled — ack after commit (processed, duplicate,
 * dead-lettered; dead letters also go to the broker's own dead-letter path), nack with
 * backoff after a failed attempt, nack shortly when a duplicate is still in flight or
 * the store failed. Acks never precede commits, so a crash at any point means a
 * redelivery that the inbox recognises.
 *
 * @example
 * const consumer = await startConsumer({
 *   inbox,
 *   source: rabbitmqSource({ channel, queue: 'claims' }),
 *   handler: async (tx, message) => { await tx.query('INSERT …', [message.body.claimId]) },
 * })
 * // later: await consumer.stop()
 * @see docs/queue.md
 */
export async function startConsumer<Tx, Body = unknown>(options: ConsumerOptions<Tx, Body>): Promise<Consumer> {
  assertKnownOptions('startConsumer', options, OPTIONS)
  const {
    inbox,
    source,
    handler,
    decode = decodeJson,
    retry = { baseMs: 1_000, maxMs: 60_000 },
    onSettled,
    storeRetryMs = 1_000,
  } = options
  const caller = 'startConsumer'
  if (inbox === null || typeof inbox !== 'object' || typeof inbox.consume !== 'function') {
    throw new InvalidOptionError(`${caller}: option "inbox" must come from createInbox(...)`)
  }
  if (source === null || typeof source !== 'object' || typeof source.subscribe !== 'function') {
    throw new InvalidOptionError(`${caller}: option "source" must be a broker adapter (e.g. rabbitmqSource(...))`)
  }
  if (typeof handler !== 'function') throw new InvalidOptionError(`${caller}: option "handler" must be a function (tx, message) => …`)
  if (typeof decode !== 'function') throw new InvalidOptionError(`${caller}: option "decode" must be a function (bytes) => body`)
  assertDuration(`${caller}: option "storeRetryMs"`, storeRetryMs, 0)
  const retryDelay = backoffDelay(retry, caller, { option: 'retry' })

  const horizon = await source.redeliveryHorizonMs?.()
  if (horizon !== undefined) inbox.expectRedeliveryWithin(horizon, source.name)

  const subscription: Subscription = await source.subscribe(async (delivery) => {
    await handleDelivery(inbox, delivery, handler, decode, retryDelay, storeRetryMs, onSettled)
  })
  return { stop: () => subscription.close() }
}

/**
 * Consumes one delivery through the inbox and settles it with the broker. Exported for
 * adapters and tests that drive deliveries themselves.
 * @example
 * await handleDelivery(inbox, delivery, handler) // records, runs the handler, acks or nacks
 */
export async function handleDelivery<Tx, Body>(
  inbox: Inbox<Tx, Body>,
  delivery: Delivery,
  handler: (tx: Tx, message: ConsumedMessage<Body>) => unknown,
  decode: (data: Uint8Array) => Body = decodeJson,
  retryDelay: (attempt: number) => number = backoffDelay(undefined, 'handleDelivery'),
  storeRetryMs = 1_000,
  onSettled?: ConsumerOptions<Tx, Body>['onSettled'],
): Promise<ConsumeResult | { status: 'error'; error: unknown }> {
  const { body, decodeError } = decoded(delivery, decode)
  const message: InboxMessage<Body> = {
    id: delivery.id,
    body,
    deliveryCount: delivery.deliveryCount,
    redelivered: delivery.redelivered,
  }
  let result: ConsumeResult | { status: 'error'; error: unknown }
  try {
    result = await inbox.consume(message, (tx, m, key) => {
      if (decodeError !== undefined) throw decodeError
      // Spelled out: a spread with properties after it costs microseconds a message on Node 20.
      const consumed: ConsumedMessage<Body> = {
        id: m.id,
        body: m.body,
        deliveryCount: m.deliveryCount,
        redelivered: m.redelivered,
        key,
        delivery,
      }
      return handler(tx, consumed)
    })
  } catch (error) {
    // The store failed: nothing was committed or counted. The broker redelivers.
    result = { status: 'error', error }
  }
  await settle(delivery, result, retryDelay, storeRetryMs)
  try {
    onSettled?.(result, delivery)
  } catch {
    // A metrics hook must not change how a message is settled.
  }
  return result
}

/** The delivery's body decoded, or its bytes and why they do not decode (the handler's run then fails with that, counted as a failure). */
function decoded<Body>(delivery: Delivery, decode: (data: Uint8Array) => Body): { body: Body; decodeError?: unknown } {
  try {
    return { body: decode(delivery.data) }
  } catch (error) {
    return { body: delivery.data as Body, decodeError: error }
  }
}

/** Tells the broker what became of the message: done, dead-lettered, or to come again after a delay. */
async function settle(delivery: Delivery, result: ConsumeResult | { status: 'error'; error: unknown }, retryDelay: (attempt: number) => number, storeRetryMs: number): Promise<void> {
  switch (result.status) {
    case 'processed':
    case 'duplicate':
      await delivery.ack()
      break
    case 'dead-lettered':
      await delivery.deadLetter(result.error)
      break
    case 'failed':
      await delivery.nack(retryDelay(result.attempts))
      break
    case 'in-flight':
      await delivery.nack(result.retryAfterMs)
      break
    case 'error':
      await delivery.nack(storeRetryMs)
      break
  }
}
