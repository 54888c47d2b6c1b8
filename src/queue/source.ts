/**
 * The contract between the consumer loop and a broker adapter. An adapter only
 * converts: it turns the broker's messages into `Delivery` objects and maps `ack`,
 * `nack` and `deadLetter` to the broker's own operations. Every decision (duplicate,
 * retry, poison) is the inbox's.
 *
 * Kafka fits the same shape (`idem/queue/kafka`): `id` is `topic-partition-offset@timestamp`
 * (the same on every re-read, and not reused when the topic is created again), `ack` marks the record done and the adapter commits the
 * offset below which every record is done, `nack` hands the record over again in
 * process, and `deadLetter` produces to a dead-letter topic first. See docs/queue.md.
 */

/** One received message and the broker operations that settle it. Settle exactly once. */
export interface Delivery {
  /**
   * The broker's stable message id, or undefined if it has none: the same on every
   * redelivery of the message, and never the id of another one (not after the topic or
   * stream is created again either). Ids that arrive as bytes go through `idFromBytes`.
   */
  readonly id: string | undefined
  /** The raw content. The consumer decodes it (JSON by default). */
  readonly data: Uint8Array
  /** Broker metadata as text (AMQP headers, Redis fields, NATS headers, SQS attributes). */
  readonly headers: Readonly<Record<string, string>>
  /** Deliveries so far including this one, when the broker counts (NATS, SQS, Redis, RabbitMQ quorum queues). */
  readonly deliveryCount: number | undefined
  /** The broker's "delivered before" flag, when it has one. */
  readonly redelivered: boolean | undefined
  /** Done: the broker forgets the message. */
  ack(): Promise<void>
  /** Not done: the broker delivers it again, no sooner than `delayMs` from now (as near as the broker allows). */
  nack(delayMs: number): Promise<void>
  /**
   * Give up: the message is already in idem's dead-letter table; take it off the queue
   * for good (into the broker's own dead-letter queue where one is configured).
   */
  deadLetter(reason: string): Promise<void>
}

/** A queue, stream or subscription an adapter reads from. */
export interface MessageSource {
  /** For logs and warnings, e.g. `rabbitmq:claims`. */
  readonly name: string
  /** How long the broker may keep redelivering a message, when known (SQS retention, NATS max age). */
  redeliveryHorizonMs?(): Promise<number | undefined>
  /**
   * Starts delivering. `onDelivery` is awaited before the adapter counts a message as
   * finished for its concurrency limit. Resolves once messages are flowing.
   */
  subscribe(onDelivery: (delivery: Delivery) => Promise<void>): Promise<Subscription>
}

/** A running subscription of a `MessageSource`. */
export interface Subscription {
  /** Stops taking new messages and waits for those being handled. Unsettled ones go back to the broker. */
  close(): Promise<void>
}
