/**
 * `idem/queue/nats`: NATS JetStream pull consumers through `@nats-io/jetstream`, typed by shape.
 * - id: the `Nats-Msg-Id` header when present (the outbox deliverer sets it to the dedupe key,
 *   which also lets JetStream drop repeats within its duplicate window), else
 *   `<stream>:<stream sequence>@<stored at, ns>`: the same on every redelivery, and (by the time
 *   the stream stored it) not the id of the message that had the same sequence before the stream
 *   was deleted and created again. A `Nats-Msg-Id` holding U+FFFD counts as absent: the client
 *   reads header bytes that are not UTF-8 as U+FFFD, so it may stand for several different ids
 * - ack → `ackAck()` (waits for the server); nack(delay) → `nak(delay)`; dead letter → `term()`
 * - delivery count: `info.deliveryCount`
 * @see docs/queue.md
 */
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { DeliveryContext, OutboxRow } from '../dispatcher.js'
import { Limiter } from '../limiter.js'
import type { Delivery, MessageSource, Subscription } from '../source.js'

/** The parts of a `JsMsg` the adapter uses. */
export interface JetStreamMessage {
  readonly data: Uint8Array
  readonly seq: number
  readonly redelivered: boolean
  readonly info: {
    readonly stream: string
    readonly deliveryCount: number
    /** When the stream stored the message, in nanoseconds since the epoch. */
    readonly timestampNanos: number
  }
  readonly headers:
    | {
        /** The header's value ('' when absent). */
        get(name: string): string
        /** Every header name. */
        keys(): string[]
      }
    | undefined
  /** Acknowledges and waits for the server to confirm it. */
  ackAck(options?: { timeout: number }): Promise<boolean>
  /** Asks for a redelivery after `millis`. */
  nak(millis?: number): void
  /** Stops redelivering the message (dead letter). */
  term(reason?: string): void
}

/** What `consumer.consume()` returns: an async iterable of messages that can be closed. */
export interface JetStreamMessages extends AsyncIterable<JetStreamMessage> {
  /** Stops the consumption; messages not yet handed out are redelivered. */
  close(): Promise<void | Error>
}

/** The parts of a JetStream `Consumer` (from `js.consumers.get(stream, durable)`) the adapter uses. */
export interface JetStreamConsumer {
  /** Starts pulling messages, at most `max_messages` outstanding. */
  consume(options?: { max_messages?: number }): Promise<JetStreamMessages>
}

/** The parts of a `JetStreamClient` the deliverer uses. */
export interface JetStreamPublisher {
  /** Publishes and waits for the stream's ack; `duplicate` when `msgID` was seen within the duplicate window. */
  publish(subject: string, payload?: Uint8Array, options?: { msgID?: string; timeout?: number }): Promise<{ duplicate: boolean; seq: number }>
}

/** What `natsSource` takes: the JetStream consumer, concurrency, redelivery horizon and ack timeout. */
export interface NatsSourceOptions {
  /** A durable pull consumer: `await js.consumers.get(stream, durableName)`. */
  consumer: JetStreamConsumer
  /** For logs. @default 'nats' */
  name?: string
  /** Messages handled at once (and pulled ahead). @default 20 */
  concurrency?: number
  /** How long the stream keeps messages (its `max_age`), so the inbox can warn if it forgets ids sooner. */
  redeliveryHorizonMs?: number
  /** How long to wait for the server to confirm an ack. @default 5000 */
  ackTimeoutMs?: number
}

const SOURCE_OPTIONS = optionNames<NatsSourceOptions>({ consumer: true, name: true, concurrency: true, redeliveryHorizonMs: true, ackTimeoutMs: true })

/**
 * Reads a JetStream durable consumer.
 * @example
 * const js = jetstream(await connect({ servers: 'nats://127.0.0.1:4222' }))
 * const source = natsSource({ consumer: await js.consumers.get('CLAIMS', 'intake') })
 * await startConsumer({ inbox, source, handler })
 */
export function natsSource(options: NatsSourceOptions): MessageSource {
  assertKnownOptions('natsSource', options, SOURCE_OPTIONS)
  const { consumer, name = 'nats', concurrency = 20, redeliveryHorizonMs, ackTimeoutMs = 5_000 } = options
  if (consumer === null || typeof consumer !== 'object' || typeof consumer.consume !== 'function') {
    throw new InvalidOptionError('natsSource: option "consumer" must be a JetStream consumer (js.consumers.get(stream, durable))')
  }
  assertCount('natsSource: option "concurrency"', concurrency, 1, 10_000)
  if (redeliveryHorizonMs !== undefined) assertDuration('natsSource: option "redeliveryHorizonMs"', redeliveryHorizonMs, 0)
  assertDuration('natsSource: option "ackTimeoutMs"', ackTimeoutMs, 1)
  return {
    name: `nats:${name}`,
    redeliveryHorizonMs: async () => redeliveryHorizonMs,
    async subscribe(onDelivery): Promise<Subscription> {
      const running = new Limiter(concurrency)
      const messages = await consumer.consume({ max_messages: concurrency })
      const loop = (async () => {
        for await (const message of messages) await running.run(() => onDelivery(toDelivery(message, ackTimeoutMs)))
      })()
      return {
        async close() {
          await messages.close()
          await loop.catch(() => {})
          await running.idle()
        },
      }
    },
  }
}

// What the client reads header bytes that are not UTF-8 as.
const REPLACEMENT = '\ufffd'

function toDelivery(message: JetStreamMessage, ackTimeoutMs: number): Delivery {
  const headers: Record<string, string> = {}
  for (const key of message.headers?.keys() ?? []) headers[key] = message.headers!.get(key)
  const given = headers['Nats-Msg-Id']
  return {
    // The stored-at time keeps the sequence apart from the same sequence of an earlier stream
    // of this name; a given id with U+FFFD may be several producers' ids read alike, so the
    // message's own stream identity is used (JetStream compares the raw bytes within its
    // duplicate window).
    id: given && !given.includes(REPLACEMENT) ? given : `${message.info.stream}:${message.seq}@${message.info.timestampNanos}`,
    data: message.data,
    headers,
    deliveryCount: message.info.deliveryCount,
    redelivered: message.redelivered,
    async ack() {
      // A lost ack means a redelivery, which the inbox absorbs; waiting makes it rare.
      await message.ackAck({ timeout: ackTimeoutMs }).catch(() => false)
    },
    async nack(delayMs) {
      message.nak(delayMs)
    },
    async deadLetter() {
      // Reasons on TERM need NATS 2.11; the reason is in idem's dead-letter table already.
      message.term()
    },
  }
}

/** What `natsDeliverer` takes: the JetStream client and the subject of each row. */
export interface NatsDelivererOptions {
  js: JetStreamPublisher
  /** @default the row's topic */
  subject?: (row: OutboxRow) => string
}

const DELIVERER_OPTIONS = optionNames<NatsDelivererOptions>({ js: true, subject: true })

/**
 * An outbox deliverer that publishes each row as JSON with `Nats-Msg-Id` set to its
 * dedupe key: JetStream itself drops a repeat within the stream's duplicate window,
 * and a consumer's inbox drops one after it. The JetStream client takes no abort
 * signal, so the dispatcher's signal only stops a publish that has not started; one
 * that has settles within the client's own timeout.
 * @example createDispatcher({ store: postgresStore({ pool }), deliver: natsDeliverer({ js: jetstream(nc) }) }).start()
 */
export function natsDeliverer(options: NatsDelivererOptions): (row: OutboxRow, context?: DeliveryContext) => Promise<void> {
  assertKnownOptions('natsDeliverer', options, DELIVERER_OPTIONS)
  const { js, subject = (row) => row.topic } = options
  if (js === null || typeof js !== 'object' || typeof js.publish !== 'function') {
    throw new InvalidOptionError('natsDeliverer: option "js" must be a JetStream client (jetstream(nc))')
  }
  const encoder = new TextEncoder()
  return async (row, context) => {
    context?.signal.throwIfAborted()
    await js.publish(subject(row), encoder.encode(JSON.stringify(row.payload)), { msgID: row.dedupeKey })
  }
}
