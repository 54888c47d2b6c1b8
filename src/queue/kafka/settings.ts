import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, optionNames, shown } from '../../core/errors/option-checks.js'
import { assertClient, assertConfig, assertTopic } from './checks.js'
import { assertOwnSettings, dialectOf, type KafkaClient, type KafkaConsumer, type KafkaDialect, type KafkaProducer } from './client.js'
import { KAFKA_ID_HEADER, type KafkaSourceOptions } from './options.js'

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

const KAFKAJS_HEARTBEAT_INTERVAL_MS = 3_000

/** `kafkaSource`'s options, every default applied and checked, with the client's dialect and the consumer and producer made from them. */
export interface KafkaSettings {
  readonly dialect: KafkaDialect
  readonly groupId: string
  readonly topics: string[]
  readonly fromBeginning: boolean
  readonly concurrency: number
  readonly partitionsConsumedConcurrently: number
  readonly maxNackDelayMs: number
  readonly commitIntervalMs: number
  readonly heartbeatMs: number
  readonly idHeader: string
  readonly redeliveryHorizonMs: number | undefined
  /** Where a topic's dead letters go; null: only committed past. */
  readonly deadLetterTopicOf: ((topic: string) => string) | null
  readonly consumer: KafkaConsumer
  /** The dead-letter producer; absent without a dead-letter topic. */
  readonly producer: KafkaProducer | undefined
}

/** The options checked, each mistake named by its option; the consumer (and producer) made. */
export function sourceSettings<K extends KafkaClient>(caller: string, options: KafkaSourceOptions<K>): KafkaSettings {
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

  const consumer = kafka.consumer(dialect.consumerConfig({ groupId, fromBeginning, config: consumerConfig }))
  const producer = deadLetterTopicOf === null ? undefined : kafka.producer(dialect.producerConfig(producerConfig, idempotent))
  const counts = { concurrency, partitionsConsumedConcurrently, maxNackDelayMs, commitIntervalMs, heartbeatMs }
  return { dialect, groupId, topics, fromBeginning, ...counts, idHeader, redeliveryHorizonMs, deadLetterTopicOf, consumer, producer }
}
