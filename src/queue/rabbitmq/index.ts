/**
 * `idem/queue/rabbitmq`: RabbitMQ through amqplib, typed by shape (amqplib 0.10 and 2.x fit).
 * - id: the `messageId` property (set it when publishing; the outbox deliverer sets it to the dedupe key)
 * - ack → `channel.ack`; nack(delay) → hold, then `channel.nack(requeue)`; dead letter → `channel.nack(no requeue)`,
 *   which the queue's dead-letter exchange (`x-dead-letter-exchange`) receives when configured
 * - delivery count: the `x-delivery-count` header of quorum queues; classic queues give only `redelivered`
 * @see docs/queue.md
 */
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, optionNames } from '../../core/errors/option-checks.js'
import type { DeliveryContext, OutboxRow } from '../dispatcher.js'
import { Limiter } from '../limiter.js'
import { NackTimers } from '../nack-timers.js'
import { textHeaders } from '../text-headers.js'
import type { Delivery, MessageSource, Subscription } from '../source.js'

/** The parts of an amqplib message the adapter reads. */
export interface AmqpMessage {
  content: Uint8Array
  fields: { deliveryTag: number; redelivered: boolean }
  properties: { messageId?: string | undefined; headers?: Record<string, unknown> | undefined }
}

/** The parts of an amqplib `Channel` the source uses. */
export interface AmqpChannel {
  /** Starts a consumer on `queue`; `onMessage` gets null when the broker cancels it. */
  consume(queue: string, onMessage: (message: AmqpMessage | null) => void, options?: { noAck?: boolean }): Promise<{ consumerTag: string }>
  /** Stops the consumer; unacknowledged messages stay with it until settled. */
  cancel(consumerTag: string): Promise<unknown>
  /** Acknowledges a message: the broker forgets it. */
  ack(message: AmqpMessage): void
  /** Rejects a message: requeued, or (without `requeue`) dead-lettered through the queue's dead-letter exchange. */
  nack(message: AmqpMessage, allUpTo?: boolean, requeue?: boolean): void
  /** Limits how many unacknowledged messages the channel holds at once. */
  prefetch(count: number): Promise<unknown>
}

/** The parts of an amqplib `ConfirmChannel` the deliverer uses. */
export interface AmqpConfirmChannel {
  /** Publishes a message; `callback` runs once the broker confirms or refuses it. */
  publish(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: { messageId: string; contentType: string; persistent: boolean; headers?: Record<string, unknown> },
    callback: (error: unknown) => void,
  ): boolean
}

/** What `rabbitmqSource` takes: the channel, the queue, prefetch and the longest redelivery delay. */
export interface RabbitmqSourceOptions {
  channel: AmqpChannel
  queue: string
  /** Unacknowledged messages at once (AMQP prefetch), which is also the handling concurrency. @default 20 */
  prefetch?: number
  /** Longest a nack holds a message before requeueing it; longer delays are cut to this. @default 30000 */
  maxNackDelayMs?: number
}

const SOURCE_OPTIONS = optionNames<RabbitmqSourceOptions>({ channel: true, queue: true, prefetch: true, maxNackDelayMs: true })

/**
 * Reads a RabbitMQ queue.
 * @example
 * const channel = await (await amqplib.connect(url)).createChannel()
 * await startConsumer({ inbox, source: rabbitmqSource({ channel, queue: 'claims' }), handler })
 */
export function rabbitmqSource(options: RabbitmqSourceOptions): MessageSource {
  assertKnownOptions('rabbitmqSource', options, SOURCE_OPTIONS)
  const { channel, queue, prefetch = 20, maxNackDelayMs = 30_000 } = options
  if (channel === null || typeof channel !== 'object' || typeof channel.consume !== 'function') {
    throw new InvalidOptionError('rabbitmqSource: option "channel" must be an amqplib Channel')
  }
  assertName('rabbitmqSource: option "queue"', queue, 255)
  assertCount('rabbitmqSource: option "prefetch"', prefetch, 1, 65_535)
  assertDuration('rabbitmqSource: option "maxNackDelayMs"', maxNackDelayMs, 0)
  return {
    name: `rabbitmq:${queue}`,
    async subscribe(onDelivery): Promise<Subscription> {
      const running = new Limiter(prefetch)
      const timers = new NackTimers()
      await channel.prefetch(prefetch)
      const { consumerTag } = await channel.consume(queue, (message) => {
        // null: the broker cancelled the consumer (queue deleted); nothing to settle.
        if (message === null) return
        void running.run(() => onDelivery(toDelivery(channel, message, timers, maxNackDelayMs)))
      })
      return {
        async close() {
          await channel.cancel(consumerTag)
          await running.idle()
          timers.flush()
        },
      }
    },
  }
}

function toDelivery(channel: AmqpChannel, message: AmqpMessage, timers: NackTimers, maxNackDelayMs: number): Delivery {
  const headers = textHeaders(message.properties.headers)
  // Quorum queues count earlier deliveries in x-delivery-count.
  const previous = Number(headers['x-delivery-count'])
  return {
    id: message.properties.messageId || undefined,
    data: message.content,
    headers,
    deliveryCount: Number.isInteger(previous) ? previous + 1 : undefined,
    redelivered: message.fields.redelivered,
    async ack() {
      channel.ack(message)
    },
    async nack(delayMs) {
      // AMQP has no delayed requeue: hold the message (it counts against prefetch) until then.
      const requeue = () => channel.nack(message, false, true)
      if (delayMs <= 0) requeue()
      else timers.after(Math.min(delayMs, maxNackDelayMs), requeue)
    },
    async deadLetter() {
      channel.nack(message, false, false)
    },
  }
}

/** What `rabbitmqDeliverer` takes: the confirm channel and where each row is published. */
export interface RabbitmqDelivererOptions {
  /** A confirm channel (`connection.createConfirmChannel()`): a row counts as delivered only once the broker confirms it. */
  channel: AmqpConfirmChannel
  /** @default '' (the default exchange: the routing key is the queue name) */
  exchange?: string
  /** @default the row's topic */
  routingKey?: (row: OutboxRow) => string
}

const DELIVERER_OPTIONS = optionNames<RabbitmqDelivererOptions>({ channel: true, exchange: true, routingKey: true })

/**
 * An outbox deliverer that publishes each row as a persistent JSON message whose
 * `messageId` is the row's dedupe key, so a consumer's inbox drops a repeat.
 * amqplib cannot take back a publish, so the dispatcher's signal only stops one that has
 * not started; a publish waits for the broker's confirm (or the channel's failure).
 * @example createDispatcher({ store: postgresStore({ pool }), deliver: rabbitmqDeliverer({ channel: confirmChannel }) }).start()
 */
export function rabbitmqDeliverer(options: RabbitmqDelivererOptions): (row: OutboxRow, context?: DeliveryContext) => Promise<void> {
  assertKnownOptions('rabbitmqDeliverer', options, DELIVERER_OPTIONS)
  const {
    channel,
    exchange = '',
    routingKey = (row) => row.topic,
  } = options
  if (channel === null || typeof channel !== 'object' || typeof channel.publish !== 'function') {
    throw new InvalidOptionError('rabbitmqDeliverer: option "channel" must be an amqplib ConfirmChannel')
  }
  return (row, context) =>
    new Promise<void>((resolve, reject) => {
      context?.signal.throwIfAborted()
      channel.publish(
        exchange,
        routingKey(row),
        Buffer.from(JSON.stringify(row.payload)),
        { messageId: row.dedupeKey, contentType: 'application/json', persistent: true },
        (error) => (error ? reject(error instanceof Error ? error : new Error(`RabbitMQ refused the message: ${String(error)}`)) : resolve()),
      )
    })
}
