/**
 * The Kafka clients the adapter drives, typed by the parts it uses, and the one place that
 * knows how the two libraries differ. kafkajs 2.x and Confluent's
 * `@confluentinc/kafka-javascript` (its `KafkaJS` API, over librdkafka) take the same
 * calls, with their settings in different places: Confluent's takes `groupId`,
 * `fromBeginning` and `autoCommit` in the consumer's `kafkaJS` block, not on `subscribe`
 * and `run`, and `acks` on the producer, not on `send`; it has no `stop()` (its
 * `disconnect()` waits for the batches in hand), and librdkafka heartbeats from its own
 * thread, so `heartbeat()` is a no-op there.
 */
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { shown } from '../../core/errors/option-checks.js'

/** Record headers as the clients give and take them. */
export interface KafkaHeaders {
  [name: string]: Buffer | string | (Buffer | string)[] | undefined
}

/** The parts of a fetched record the adapter reads. */
export interface KafkaRecord {
  readonly offset: string
  readonly key: Buffer | null
  readonly value: Buffer | null
  readonly timestamp: string
  readonly headers?: KafkaHeaders | undefined
}

/** The parts of the `eachBatch` payload the adapter uses. */
export interface KafkaBatchPayload {
  batch: { readonly topic: string; readonly partition: number; readonly messages: readonly KafkaRecord[] }
  /** Marks the records up to `offset` processed, so a commit may include them. */
  resolveOffset(offset: string): void
  /** Tells the group this member is alive (and learns of a rebalance); a no-op on Confluent's client. */
  heartbeat(): Promise<void>
  /** Commits the given offsets (kafkajs) or the resolved ones (Confluent) unless the consumer auto-commits. */
  commitOffsetsIfNecessary(offsets?: { topics: { topic: string; partitions: { partition: number; offset: string }[] }[] }): Promise<void>
  /** False once the consumer is stopping. */
  isRunning(): boolean
  /** True when the batch is stale: a seek or a rebalance has moved the partition on. */
  isStale(): boolean
}

/** How the consumer is run: no auto-commit, offsets resolved by the adapter. */
export interface KafkaRunConfig {
  autoCommit?: boolean
  eachBatchAutoResolve: boolean
  partitionsConsumedConcurrently: number
  /** Handles one fetched batch of one partition. */
  eachBatch(payload: KafkaBatchPayload): Promise<void>
}

/** The parts of a consumer the adapter uses. */
export interface KafkaConsumer {
  /** Connects to the cluster. */
  connect(): Promise<void>
  /** Leaves the group and closes the connections. */
  disconnect(): Promise<void>
  /** Stops consuming (kafkajs; Confluent's client has none and throws). */
  stop(): Promise<void>
  /** Subscribes to the topics, before `run`. */
  subscribe(subscription: { topics: string[]; fromBeginning?: boolean }): Promise<void>
  /** Starts consuming: `eachBatch` is called with each fetched batch. */
  run(config: KafkaRunConfig): Promise<void>
}

/** One record to produce, as the clients take it. */
export interface KafkaOutgoing {
  key?: Buffer | string | null
  value: Buffer | string | null
  headers?: KafkaHeaders
}

/** The parts of a producer the adapter uses. */
export interface KafkaProducer {
  /** Connects to the cluster. */
  connect(): Promise<void>
  /** Closes the connections. */
  disconnect(): Promise<void>
  /** Produces the records and resolves once the cluster acknowledges them (`acks`). */
  send(record: { topic: string; messages: KafkaOutgoing[]; acks?: number }): Promise<unknown>
}

/**
 * Consumer settings passed through to `kafka.consumer(...)`, less what the adapter sets.
 * kafkajs: its `ConsumerConfig` (`sessionTimeout`, `heartbeatInterval`, …). Confluent's:
 * librdkafka properties, with the KafkaJS-style ones in `kafkaJS`.
 */
export interface KafkaConsumerConfig {
  sessionTimeout?: number
  rebalanceTimeout?: number
  heartbeatInterval?: number
  maxBytesPerPartition?: number
  maxWaitTimeInMs?: number
  kafkaJS?: Record<string, unknown>
  [setting: string]: unknown
}

/** Producer settings passed through to `kafka.producer(...)` (Confluent's: KafkaJS-style ones in `kafkaJS`). */
export interface KafkaProducerConfig {
  idempotent?: boolean
  maxInFlightRequests?: number
  kafkaJS?: Record<string, unknown>
  [setting: string]: unknown
}

/**
 * A `Kafka` client, typed by the two factories the adapter calls: kafkajs's
 * `new Kafka({ clientId, brokers })`, or Confluent's
 * `new (require('@confluentinc/kafka-javascript').KafkaJS.Kafka)({ kafkaJS: { clientId, brokers } })`.
 * The settings are typed by the one key each library's own type declares (kafkajs's
 * `groupId`, Confluent's `kafkaJS` block), so that both clients fit.
 */
export interface KafkaClient {
  /** A consumer. */
  consumer(config: { groupId?: string; kafkaJS?: object }): KafkaConsumer
  /** A producer. */
  producer(config?: { idempotent?: boolean; kafkaJS?: object }): KafkaProducer
}

/** Which library made the `kafka` client: `'kafkajs'` (kafkajs 2.x) or `'confluent'` (`@confluentinc/kafka-javascript`'s `KafkaJS`). */
export type KafkaLibrary = 'kafkajs' | 'confluent'

/** What the adapter asks of a consumer, in terms of the library. */
export interface ConsumerRequest {
  groupId: string
  fromBeginning: boolean
  config: KafkaConsumerConfig
}

/** How one library takes the adapter's calls. */
export interface KafkaDialect {
  readonly library: KafkaLibrary
  /** The consumer's settings, the adapter's own included. */
  consumerConfig(request: ConsumerRequest): KafkaConsumerConfig
  /** The producer's settings: idempotent (with its order kept) or not, acknowledged by all in-sync replicas. */
  producerConfig(config: KafkaProducerConfig, idempotent: boolean): KafkaProducerConfig
  /** Subscribes the consumer. */
  subscribe(consumer: KafkaConsumer, topics: string[], fromBeginning: boolean): Promise<void>
  /** Runs the consumer with offsets left to the adapter. */
  run(consumer: KafkaConsumer, config: Omit<KafkaRunConfig, 'autoCommit' | 'eachBatchAutoResolve'>): Promise<void>
  /** Produces records, acknowledged by all in-sync replicas. */
  send(producer: KafkaProducer, topic: string, messages: KafkaOutgoing[]): Promise<unknown>
  /** Waits for the batches in hand (they commit what is done), leaves the group and disconnects. */
  close(consumer: KafkaConsumer): Promise<void>
  /** Whether a long batch must heartbeat itself (kafkajs) or the client does (librdkafka). */
  readonly heartbeatsInBatch: boolean
}

const kafkajs: KafkaDialect = {
  library: 'kafkajs',
  consumerConfig: ({ groupId, config }) => ({ ...config, groupId }),
  // One request in flight keeps an idempotent kafkajs producer's sequence numbers, and so its order, intact.
  producerConfig: (config, idempotent) => (idempotent ? { ...config, idempotent: true, maxInFlightRequests: 1 } : { ...config, idempotent: false }),
  subscribe: (consumer, topics, fromBeginning) => consumer.subscribe({ topics: [...topics], fromBeginning }),
  run: (consumer, config) => consumer.run({ ...config, autoCommit: false, eachBatchAutoResolve: false }),
  // acks -1: all in-sync replicas, which the idempotent producer requires.
  send: (producer, topic, messages) => producer.send({ topic, messages, acks: -1 }),
  async close(consumer) {
    // stop() waits for the batches in progress (they commit what is done) and leaves the group.
    await consumer.stop()
    await consumer.disconnect()
  },
  heartbeatsInBatch: true,
}

const confluent: KafkaDialect = {
  library: 'confluent',
  consumerConfig: ({ groupId, fromBeginning, config }) => ({ ...config, kafkaJS: { ...config.kafkaJS, groupId, fromBeginning, autoCommit: false } }),
  // librdkafka keeps an idempotent producer's order with up to 5 requests in flight.
  producerConfig: (config, idempotent) => ({ ...config, kafkaJS: { ...config.kafkaJS, idempotent, acks: -1 } }),
  subscribe: (consumer, topics) => consumer.subscribe({ topics: [...topics] }),
  run: (consumer, config) => consumer.run({ ...config, eachBatchAutoResolve: false }),
  send: (producer, topic, messages) => producer.send({ topic, messages }),
  // disconnect() waits for the batches in progress (they commit what is done), then leaves the group.
  close: (consumer) => consumer.disconnect(),
  heartbeatsInBatch: false,
}

/** The dialect of `library`; an unknown name is refused. */
export function dialectOf(caller: string, library: unknown): KafkaDialect {
  if (library === 'kafkajs') return kafkajs
  if (library === 'confluent') return confluent
  throw new InvalidOptionError(`${caller}: option "library" must be 'kafkajs' or 'confluent', got ${shown(library)}`)
}

// Settings the adapter owns, by where each library takes them.
const OWNED = {
  kafkajs: { consumer: ['groupId'], producer: [] },
  confluent: { consumer: ['groupId', 'fromBeginning', 'autoCommit', 'group.id', 'enable.auto.commit', 'auto.offset.reset'], producer: ['acks'] },
} as const

/** Refuses client settings that would undo the adapter's own (its group, start and commits). */
export function assertOwnSettings(caller: string, option: 'consumerConfig' | 'producerConfig', dialect: KafkaDialect, config: KafkaConsumerConfig | KafkaProducerConfig): void {
  const kafkaJS: unknown = config.kafkaJS
  if (kafkaJS !== undefined && (kafkaJS === null || typeof kafkaJS !== 'object' || Array.isArray(kafkaJS))) {
    throw new InvalidOptionError(`${caller}: option "${option}".kafkaJS must be an object of client settings, got ${shown(kafkaJS)}`)
  }
  const owned = OWNED[dialect.library][option === 'consumerConfig' ? 'consumer' : 'producer']
  for (const name of owned) {
    const set = name in config || (dialect.library === 'confluent' && kafkaJS !== undefined && name in kafkaJS)
    if (set) throw new InvalidOptionError(`${caller}: option "${option}" must not set ${name}; the adapter sets it${name === 'groupId' ? ' (pass "groupId" itself)' : ''}`)
  }
}
