import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames, shown } from '../../core/errors/option-checks.js'
import type { DeliveryContext, OutboxRow } from '../dispatcher.js'
import { assertClient, assertConfig } from './checks.js'
import { assertOwnSettings, dialectOf, type KafkaClient, type KafkaLibrary, type KafkaProducerConfig } from './client.js'
import { KAFKA_ID_HEADER } from './options.js'

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
