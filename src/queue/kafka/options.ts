import type { MessageSource } from '../source.js'
import type { KafkaClient, KafkaConsumer, KafkaConsumerConfig, KafkaLibrary, KafkaProducerConfig } from './client.js'

/** The header carrying idem's message id (the outbox deliverer writes the dedupe key there). */
export const KAFKA_ID_HEADER = 'idem-id'
/** The header a dead-lettered copy carries its last error in. */
export const KAFKA_ERROR_HEADER = 'idem-error'
/** The header a dead-lettered copy names its origin in: `<topic>-<partition>-<offset>`. */
export const KAFKA_SOURCE_HEADER = 'idem-source'

/** What `kafkaSource` takes: the client and its library, the group and topics, concurrency, commit interval, redelivery and the dead-letter topic. */
export interface KafkaSourceOptions<K extends KafkaClient = KafkaClient> {
  /**
   * The client: kafkajs's `new Kafka({ clientId, brokers })`, or Confluent's
   * `new KafkaJS.Kafka({ kafkaJS: { clientId, brokers } })` with `library: 'confluent'`.
   * The source makes its own consumer (and dead-letter producer) from it.
   */
  kafka: K
  /** The library that made `kafka`, which decides where the adapter's settings go. @default 'kafkajs' */
  library?: KafkaLibrary
  /** The consumer group; every instance of one logical consumer shares it. */
  groupId: string
  /** Topics to read (names, not patterns). */
  topics: string[]
  /** Where a group without committed offsets starts: the oldest record (`true`) or only new ones. @default true */
  fromBeginning?: boolean
  /** Records of one partition handled at once. Above 1, records of a partition may finish out of order. @default 1 */
  concurrency?: number
  /** Partitions handled at once (the client's `partitionsConsumedConcurrently`). @default 1 */
  partitionsConsumedConcurrently?: number
  /** Longest a nack holds a record before handing it over again; longer delays are cut to this. @default 30000 */
  maxNackDelayMs?: number
  /**
   * How often a partition commits its done records while its batch is still running;
   * the batch's end (or a rebalance or close cutting it short) always commits. @default 1000
   */
  commitIntervalMs?: number
  /**
   * Where dead letters are copied: a topic, or a function of the record's topic; `null` to
   * only commit past them (idem's dead-letter table keeps them). @default `<topic>.dead`
   */
  deadLetterTopic?: string | ((topic: string) => string) | null
  /** The header holding a producer-set message id. @default 'idem-id' */
  idHeader?: string
  /**
   * The dead-letter producer is idempotent (`idempotent: true`; kafkajs: one request in flight).
   * Turn it off only for a broker that cannot serve it (kafkajs on librdkafka's mock cluster). @default true
   */
  idempotent?: boolean
  /**
   * Passed to `kafka.consumer(...)`: session timeout, heartbeat interval, fetch sizes
   * (Confluent's: librdkafka properties, the KafkaJS-style ones in `kafkaJS`). The group,
   * where it starts and the commits are the adapter's.
   */
  consumerConfig?: KafkaConsumerConfig
  /** Passed to `kafka.producer(...)` for the dead-letter producer (Confluent's: KafkaJS-style ones in `kafkaJS`). */
  producerConfig?: KafkaProducerConfig
  /** How long the topics keep records (`retention.ms`), so the inbox can warn if it forgets ids sooner. */
  redeliveryHorizonMs?: number
}

/** A Kafka source; `consumer` is the consumer it made (kafkajs's, for its instrumentation events). */
export interface KafkaSource<C extends KafkaConsumer = KafkaConsumer> extends MessageSource {
  readonly consumer: C
}
