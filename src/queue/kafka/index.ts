/**
 * `idem/queue/kafka`: Kafka consumer groups through kafkajs 2.x or Confluent's
 * `@confluentinc/kafka-javascript` (its KafkaJS API), typed by shape (`./client.ts`).
 * - id: the `idem-id` header when present (the outbox deliverer sets it to the dedupe key; bytes
 *   that are not UTF-8 become `hex:` and their hex digits, see `idFromBytes`), else
 *   `<topic>-<partition>-<offset>@<timestamp>`, which is the same on every re-read after a
 *   rebalance or restart, and (by the record's timestamp) not the id of the record that had
 *   the same offset before the topic was deleted and created again
 * - ack → the record is done; each partition commits the offset after its longest run of done
 *   records (every `commitIntervalMs`, and when its batch ends or a rebalance or close cuts it
 *   short), so never before the inbox's transaction has committed
 * - nack(delay) → the same record is handed over again in this process after the delay (Kafka
 *   cannot requeue one message; the partition waits, as Kafka's ordering has it)
 * - dead letter → produced to `<topic>.dead` with the error in `idem-error`, then done
 * - delivery count: this process's deliveries of the record since it was fetched (Kafka keeps none)
 * @see docs/queue.md
 */
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, optionNames, shown } from '../../core/validate.js'
import { idFromBytes } from '../byte-id.js'
import type { DeliveryContext, OutboxRow } from '../dispatcher.js'
import { Limiter } from '../limiter.js'
import type { Delivery, MessageSource, Subscription } from '../source.js'
import {
  assertOwnSettings,
  dialectOf,
  type KafkaBatchPayload,
  type KafkaClient,
  type KafkaConsumer,
  type KafkaConsumerConfig,
  type KafkaHeaders,
  type KafkaLibrary,
  type KafkaProducerConfig,
  type KafkaRecord,
} from './client.js'

export type {
  KafkaBatchPayload,
  KafkaClient,
  KafkaConsumer,
  KafkaConsumerConfig,
  KafkaHeaders,
  KafkaLibrary,
  KafkaOutgoing,
  KafkaProducer,
  KafkaProducerConfig,
  KafkaRecord,
  KafkaRunConfig,
} from './client.js'

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

const SOURCE_OPTIONS = optionNames<KafkaSourceOptions>({
  kafka: true,
  library: true,
  groupId: true,
  topics: true,
  fromBeginning: true,
  concurrency: true,
  partitionsConsumedConcurrently: true,
  maxNackDelayMs: true,
  commitIntervalMs: true,
  deadLetterTopic: true,
  idHeader: true,
  idempotent: true,
  consumerConfig: true,
  producerConfig: true,
  redeliveryHorizonMs: true,
})

// Kafka's own rule for topic names.
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/
// Heartbeat answers that mean this member's partitions are being (or have been) taken away.
const MEMBERSHIP_LOST = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'NOT_COORDINATOR_FOR_GROUP', 'FENCED_INSTANCE_ID'])
const KAFKAJS_HEARTBEAT_INTERVAL_MS = 3_000

/**
 * Reads Kafka topics through a consumer group. Each partition's batch is handed over
 * record by record; a record's offset is committed only after it was settled, which
 * `startConsumer` does only after the inbox's transaction committed. When a rebalance
 * takes partitions away mid-batch, the source starts nothing more from the batch, lets
 * the records in hand finish, commits the run of done ones and gives the partition up:
 * the new owner reads on from that commit, and the inbox finds the ones finished since
 * as duplicates. So no record is skipped, and none is applied twice.
 *
 * @example
 * const kafka = new Kafka({ clientId: 'intake', brokers: ['kafka-1:9092'] })
 * const source = kafkaSource({ kafka, groupId: 'claims-intake', topics: ['claims'] })
 * const consumer = await startConsumer({ inbox, source, handler })
 * // later: await consumer.stop() (commits, leaves the group, disconnects)
 */
export function kafkaSource<K extends KafkaClient>(options: KafkaSourceOptions<K>): KafkaSource<ReturnType<K['consumer']>> {
  const caller = 'kafkaSource'
  if (options === null || typeof options !== 'object') throw new InvalidOptionError(`${caller}: pass options { kafka, groupId, topics }`)
  assertKnownOptions(caller, options, SOURCE_OPTIONS)
  const {
    kafka,
    library = 'kafkajs',
    groupId,
    topics,
    fromBeginning = true,
    concurrency = 1,
    partitionsConsumedConcurrently = 1,
    maxNackDelayMs = 30_000,
    commitIntervalMs = 1_000,
    deadLetterTopic = (topic: string) => `${topic}.dead`,
    idHeader = KAFKA_ID_HEADER,
    idempotent = true,
    consumerConfig = {},
    producerConfig = {},
    redeliveryHorizonMs,
  } = options
  assertClient(caller, kafka)
  const dialect = dialectOf(caller, library)
  assertName(`${caller}: option "groupId"`, groupId, 255)
  if (!Array.isArray(topics) || topics.length === 0) throw new InvalidOptionError(`${caller}: option "topics" must be a non-empty array of topic names, got ${shown(topics)}`)
  topics.forEach((topic, i) => assertTopic(`${caller}: option "topics"[${i}]`, topic))
  if (typeof fromBeginning !== 'boolean') throw new InvalidOptionError(`${caller}: option "fromBeginning" must be true or false, got ${shown(fromBeginning)}`)
  assertCount(`${caller}: option "concurrency"`, concurrency, 1, 10_000)
  assertCount(`${caller}: option "partitionsConsumedConcurrently"`, partitionsConsumedConcurrently, 1, 10_000)
  assertDuration(`${caller}: option "maxNackDelayMs"`, maxNackDelayMs, 0)
  assertDuration(`${caller}: option "commitIntervalMs"`, commitIntervalMs, 0)
  if (deadLetterTopic !== null && typeof deadLetterTopic !== 'function') assertTopic(`${caller}: option "deadLetterTopic"`, deadLetterTopic)
  assertName(`${caller}: option "idHeader"`, idHeader, 255)
  if (typeof idempotent !== 'boolean') throw new InvalidOptionError(`${caller}: option "idempotent" must be true or false, got ${shown(idempotent)}`)
  assertConfig(`${caller}: option "consumerConfig"`, consumerConfig)
  assertConfig(`${caller}: option "producerConfig"`, producerConfig)
  assertOwnSettings(caller, 'consumerConfig', dialect, consumerConfig)
  assertOwnSettings(caller, 'producerConfig', dialect, producerConfig)
  const heartbeatMs = consumerConfig.heartbeatInterval ?? KAFKAJS_HEARTBEAT_INTERVAL_MS
  assertDuration(`${caller}: option "consumerConfig".heartbeatInterval`, heartbeatMs, 1)
  if (redeliveryHorizonMs !== undefined) assertDuration(`${caller}: option "redeliveryHorizonMs"`, redeliveryHorizonMs, 0)
  const deadLetterTopicOf = deadLetterTopic === null ? null : typeof deadLetterTopic === 'function' ? deadLetterTopic : () => deadLetterTopic

  const consumer: KafkaConsumer = kafka.consumer(dialect.consumerConfig({ groupId, fromBeginning, config: consumerConfig }))
  const producer = deadLetterTopicOf === null ? undefined : kafka.producer(dialect.producerConfig(producerConfig, idempotent))
  let subscribed = false
  let closing = false
  // Every batch in progress, so close() can stop their retry waits at once.
  const batches = new Set<AbortController>()

  async function eachBatch({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale }: KafkaBatchPayload): Promise<void> {
    const { topic, partition, messages } = batch
    if (messages.length === 0) return
    const done = new Array<boolean>(messages.length).fill(false)
    const halted = new AbortController()
    batches.add(halted)
    let lost: unknown
    const halt = () => {
      if (!halted.signal.aborted && (closing || lost !== undefined || !isRunning() || isStale())) halted.abort()
      return halted.signal.aborted
    }
    // kafkajs heartbeats only between batches; a batch that runs longer than the session
    // (slow handlers, retry waits) must keep the membership alive itself, and this is also
    // where it hears that the group is rebalancing. (librdkafka heartbeats from its own
    // thread and rebalances between batches, which are at most 32 records there.)
    const beatMs = Math.max(50, Math.floor(heartbeatMs / 2))
    const beat = !dialect.heartbeatsInBatch
      ? undefined
      : setInterval(() => {
          heartbeat().catch((error: unknown) => {
            if (MEMBERSHIP_LOST.has((error as { type?: string })?.type ?? '')) {
              lost ??= error
              halt()
            }
          })
        }, beatMs)

    // Commits go out one after another, so an older offset never lands after a newer one.
    let commits = Promise.resolve()
    let lastCommitAt = performance.now()
    let doneUpTo = 0
    let sentUpTo = 0
    const commit = () => {
      while (doneUpTo < done.length && done[doneUpTo]) doneUpTo++
      if (doneUpTo === sentUpTo) return commits
      sentUpTo = doneUpTo
      const last = messages[doneUpTo - 1]!.offset
      resolveOffset(last)
      lastCommitAt = performance.now()
      const offsets = { topics: [{ topic, partitions: [{ partition, offset: (BigInt(last) + 1n).toString() }] }] }
      // Not committed (the group is rebalancing, the coordinator moved): whoever owns the
      // partition next reads these again, and the inbox finds them done.
      commits = commits.then(() => commitOffsetsIfNecessary(offsets)).catch(() => {})
      return commits
    }

    /** Hands record `i` over until it is settled for good, or the batch halts with it unsettled. */
    const handle = async (i: number): Promise<void> => {
      // The slot may have come free after the batch halted.
      if (halt()) return
      const record = messages[i]!
      for (let count = 1; ; count++) {
        const settled = await deliverOnce(topic, partition, record, count, halted.signal)
        if (settled === 'done') {
          done[i] = true
          if (performance.now() - lastCommitAt >= commitIntervalMs) void commit()
          return
        }
        // Left unsettled: it stays uncommitted and the batch stops at it; kafkajs fetches it again.
        if (settled === 'left') return halted.abort()
        if (halt()) return
        await pause(Math.min(settled.retryInMs, maxNackDelayMs), halted.signal)
        if (halt()) return
      }
    }

    try {
      const running = new Limiter(concurrency)
      for (let i = 0; i < messages.length && !halt(); i++) await running.run(() => handle(i))
      await running.idle()
    } finally {
      clearInterval(beat)
      batches.delete(halted)
    }
    await commit()
    // kafkajs rejoins the group when the batch ends with the coordinator's answer.
    if (lost !== undefined) throw lost
  }

  type Settled = 'done' | 'left' | { retryInMs: number }

  /**
   * One delivery of a record. It resolves when the delivery is settled, which may be after
   * `onDelivery` returns; one still unsettled when the batch halts is left.
   */
  async function deliverOnce(topic: string, partition: number, record: KafkaRecord, count: number, halted: AbortSignal): Promise<Settled> {
    let settle!: (settled: Settled) => void
    const outcome = new Promise<Settled>((resolve) => (settle = resolve))
    let settling = false
    const once = (what: string) => {
      if (settling) throw new Error(`kafkaSource: delivery ${topic}-${partition}-${record.offset} was settled already; ${what} must not follow`)
      settling = true
    }
    const headers: Record<string, string> = {}
    let id: string | undefined
    const raw = record.headers
    if (raw !== undefined) {
      for (const name in raw) {
        const value = headerValue(raw[name])
        if (value === undefined) continue
        headers[name] = typeof value === 'string' ? value : value.toString('utf8')
        if (name === idHeader && value.length > 0) id = typeof value === 'string' ? value : idFromBytes(value)
      }
    }
    const offsetId = `${topic}-${partition}-${record.offset}`
    const fallbackId = `${offsetId}@${record.timestamp}`
    headers['kafka-topic'] = topic
    headers['kafka-partition'] = String(partition)
    headers['kafka-offset'] = record.offset
    headers['kafka-timestamp'] = record.timestamp
    if (record.key !== null) headers['kafka-key'] = record.key.toString('utf8')
    const delivery: Delivery = {
      id: id ?? fallbackId,
      data: record.value ?? new Uint8Array(0),
      headers,
      deliveryCount: count,
      redelivered: count > 1,
      async ack() {
        once('ack')
        settle('done')
      },
      async nack(delayMs) {
        once('nack')
        settle({ retryInMs: Math.max(0, delayMs) })
      },
      async deadLetter(reason) {
        once('deadLetter')
        if (deadLetterTopicOf !== null) {
          const copy: KafkaHeaders = { ...record.headers }
          copy[KAFKA_ERROR_HEADER] = reason.slice(0, 1_000) || 'unknown'
          copy[KAFKA_SOURCE_HEADER] = offsetId
          // A copy republished later keeps the inbox's id, so the inbox knows it.
          if (id === undefined) copy[idHeader] = fallbackId
          try {
            await dialect.send(producer!, deadLetterTopicOf(topic), [{ key: record.key, value: record.value, headers: copy }])
          } catch (error) {
            // Fetched again later, the record is a duplicate for the inbox (its dead letter is in idem's table).
            settle('left')
            throw error
          }
        }
        settle('done')
      },
    }
    try {
      await onDeliveryOf(delivery)
    } catch {
      // A settle step failed; what it settled (or not) is in the outcome.
    }
    if (settling) return outcome
    // Unsettled when onDelivery returned: the record is held, as an unacknowledged message is
    // elsewhere, until it is settled or the batch halts.
    if (halted.aborted) return 'left'
    const stop = () => settle('left')
    halted.addEventListener('abort', stop, { once: true })
    try {
      return await outcome
    } finally {
      halted.removeEventListener('abort', stop)
    }
  }

  let onDeliveryOf: (delivery: Delivery) => Promise<void> = async () => {}

  return {
    name: `kafka:${groupId}/${topics.join(',')}`,
    consumer: consumer as ReturnType<K['consumer']>,
    redeliveryHorizonMs: async () => redeliveryHorizonMs,
    async subscribe(onDelivery): Promise<Subscription> {
      if (subscribed) throw new Error(`${caller}: this source is subscribed already; make one source per consumer`)
      subscribed = true
      onDeliveryOf = onDelivery
      if (producer !== undefined) await producer.connect()
      await consumer.connect()
      await dialect.subscribe(consumer, topics, fromBeginning)
      await dialect.run(consumer, { partitionsConsumedConcurrently, eachBatch })
      return {
        async close() {
          closing = true
          for (const batch of batches) batch.abort()
          await dialect.close(consumer)
          await producer?.disconnect()
        },
      }
    },
  }
}

/** What `kafkaDeliverer` takes: the client and its library, the topic and record key of each row, and the producer settings. */
export interface KafkaDelivererOptions {
  /** The client (kafkajs's or Confluent's, as for `kafkaSource`). The deliverer makes its own producer from it. */
  kafka: KafkaClient
  /** The library that made `kafka`. @default 'kafkajs' */
  library?: KafkaLibrary
  /** The topic for a row. @default the row's topic */
  topic?: (row: OutboxRow) => string
  /** The record key for a row, which picks its partition (rows with one key stay in order). @default the row's dedupe key */
  key?: (row: OutboxRow) => string
  /**
   * The producer is idempotent (`idempotent: true`; kafkajs: one request in flight), so a
   * retry of a send the broker already took is not written twice. Turn it off only for a
   * broker that cannot serve it (kafkajs on librdkafka's mock cluster). @default true
   */
  idempotent?: boolean
  /** Passed to `kafka.producer(...)`: retries, partitioner (Confluent's: KafkaJS-style ones in `kafkaJS`). */
  producerConfig?: KafkaProducerConfig
}

/** An outbox deliverer with the producer it made; `close()` disconnects that producer. */
export interface KafkaDeliverer {
  (row: OutboxRow, context?: DeliveryContext): Promise<void>
  /** Disconnects the producer the deliverer made. */
  close(): Promise<void>
}

const DELIVERER_OPTIONS = optionNames<KafkaDelivererOptions>({ kafka: true, library: true, topic: true, key: true, idempotent: true, producerConfig: true })

/**
 * An outbox deliverer that produces each row as JSON, keyed (by default by its dedupe
 * key), with the dedupe key in the `idem-id` header, which `kafkaSource` takes as the
 * message id, so a consumer's inbox drops a repeat. The producer is idempotent and
 * acknowledged by all in-sync replicas. It connects on the first delivery. Neither client
 * takes an abort signal, so the dispatcher's signal only stops a send that has not
 * started; one that has settles when the producer's retries do (an idempotent kafkajs
 * producer retries until the broker takes the record, librdkafka's until
 * `message.timeout.ms`, and the dispatcher keeps the row leased meanwhile).
 * @example
 * const deliver = kafkaDeliverer({ kafka, key: (row) => (row.payload as { claimId: string }).claimId })
 * createDispatcher({ store, deliver }).start()
 * // on shutdown, after the dispatcher: await deliver.close()
 */
export function kafkaDeliverer(options: KafkaDelivererOptions): KafkaDeliverer {
  const caller = 'kafkaDeliverer'
  if (options === null || typeof options !== 'object') throw new InvalidOptionError(`${caller}: pass options { kafka }`)
  assertKnownOptions(caller, options, DELIVERER_OPTIONS)
  const { kafka, library = 'kafkajs', topic = (row: OutboxRow) => row.topic, key = (row: OutboxRow) => row.dedupeKey, idempotent = true, producerConfig = {} } = options
  assertClient(caller, kafka)
  const dialect = dialectOf(caller, library)
  if (typeof topic !== 'function') throw new InvalidOptionError(`${caller}: option "topic" must be a function of the row, got ${shown(topic)}`)
  if (typeof key !== 'function') throw new InvalidOptionError(`${caller}: option "key" must be a function of the row, got ${shown(key)}`)
  if (typeof idempotent !== 'boolean') throw new InvalidOptionError(`${caller}: option "idempotent" must be true or false, got ${shown(idempotent)}`)
  assertConfig(`${caller}: option "producerConfig"`, producerConfig)
  assertOwnSettings(caller, 'producerConfig', dialect, producerConfig)
  const producer = kafka.producer(dialect.producerConfig(producerConfig, idempotent))
  let connected: Promise<void> | undefined
  const connect = () => {
    connected ??= producer.connect().catch((error: unknown) => {
      connected = undefined
      throw error
    })
    return connected
  }

  const deliver = async (row: OutboxRow, context?: DeliveryContext) => {
    context?.signal.throwIfAborted()
    await connect()
    context?.signal.throwIfAborted()
    await dialect.send(producer, topic(row), [{ key: key(row), value: JSON.stringify(row.payload), headers: { [KAFKA_ID_HEADER]: row.dedupeKey } }])
  }
  return Object.assign(deliver, {
    async close() {
      if (connected === undefined) return
      connected = undefined
      await producer.disconnect()
    },
  })
}

function headerValue(value: KafkaHeaders[string]): Buffer | string | undefined {
  if (value === undefined || value === null) return undefined
  // A repeated header: the last one counts, as Kafka's own clients read it.
  return Array.isArray(value) ? value[value.length - 1] : value
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}

function assertClient(caller: string, kafka: unknown): asserts kafka is KafkaClient {
  const client = kafka as Partial<KafkaClient> | null
  if (client === null || typeof client !== 'object' || typeof client.consumer !== 'function' || typeof client.producer !== 'function') {
    throw new InvalidOptionError(`${caller}: option "kafka" must be a Kafka client (kafkajs's or Confluent's KafkaJS.Kafka), got ${shown(kafka)}`)
  }
}

function assertTopic(option: string, topic: unknown): asserts topic is string {
  if (typeof topic !== 'string' || !TOPIC_NAME.test(topic) || topic === '.' || topic === '..') {
    throw new InvalidOptionError(`${option} must be a Kafka topic name (1–249 of A-Z a-z 0-9 . _ -), got ${shown(topic)}`)
  }
}

function assertConfig(option: string, config: unknown): asserts config is Record<string, unknown> {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw new InvalidOptionError(`${option} must be an object of client settings, got ${shown(config)}`)
}
