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
import type { Subscription } from '../source.js'
import { runBatch } from './batch.js'
import type { KafkaClient } from './client.js'
import type { KafkaSource, KafkaSourceOptions } from './options.js'
import type { SourceRun } from './record.js'
import { sourceSettings } from './settings.js'

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
export { kafkaDeliverer, type KafkaDeliverer, type KafkaDelivererOptions } from './deliverer.js'
export { KAFKA_ERROR_HEADER, KAFKA_ID_HEADER, KAFKA_SOURCE_HEADER, type KafkaSource, type KafkaSourceOptions } from './options.js'

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
  const settings = sourceSettings(caller, options)
  const { dialect, consumer, producer, groupId, topics, fromBeginning, partitionsConsumedConcurrently } = settings
  let subscribed = false
  return {
    name: `kafka:${groupId}/${topics.join(',')}`,
    consumer: consumer as ReturnType<K['consumer']>,
    redeliveryHorizonMs: async () => settings.redeliveryHorizonMs,
    async subscribe(onDelivery): Promise<Subscription> {
      if (subscribed) throw new Error(`${caller}: this source is subscribed already; make one source per consumer`)
      subscribed = true
      const run: SourceRun = { settings, onDelivery, batches: new Set(), closing: false }
      if (producer !== undefined) await producer.connect()
      await consumer.connect()
      await dialect.subscribe(consumer, topics, fromBeginning)
      await dialect.run(consumer, { partitionsConsumedConcurrently, eachBatch: (payload) => runBatch(run, payload) })
      return {
        async close() {
          run.closing = true
          for (const batch of run.batches) batch.abort()
          await dialect.close(consumer)
          await producer?.disconnect()
        },
      }
    },
  }
}
