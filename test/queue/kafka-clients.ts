/**
 * The two Kafka libraries the adapter runs on, as the Kafka tests drive them
 * (test/queue/kafka-suite.ts): kafkajs (a dev dependency) and Confluent's
 * `@confluentinc/kafka-javascript`, which tools/kafka-confluent/install.sh builds once per
 * machine outside the repository (it compiles librdkafka). Each says where its settings go,
 * how a test watches a consumer's assignment and rebalances, and how a worker crashes:
 * kafkajs's sockets are cut in process; Confluent's client (librdkafka's threads and
 * sockets, no socket factory) runs in a child process that is SIGKILLed.
 */
import { createRequire } from 'node:module'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import kafkajs from 'kafkajs'
import type { MessageSource } from '../../src/queue/index.js'
import { kafkaSource, type KafkaClient, type KafkaConsumerConfig, type KafkaLibrary, type KafkaProducerConfig, type KafkaSourceOptions } from '../../src/queue/kafka/index.js'
import { bridgedSource } from './kafka-bridge.js'

/** Where tools/kafka-confluent/install.sh puts Confluent's client. */
export const CONFLUENT_DIR = process.env.IDEM_KAFKA_CONFLUENT_DIR ?? '/usr/local/lib/idem-kafka-confluent'

// Short session and heartbeat so a killed member is noticed in seconds; kafkajs heartbeats
// from its fetch loop, so a fetch may not wait longer than the session either. The
// rebalance timeout is above the mock's 3 s delay of a new group's first join, and the
// session timeout leaves a loaded machine room to heartbeat.
export const CONSUMER_SETTINGS = { sessionTimeout: 6_000, rebalanceTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 200 }
const RETRY = { retries: 5, initialRetryTime: 100, maxRetryTime: 1_000 }

/** The source options a test picks; the client and its library come from the library under test. */
export type SourceChoice = Omit<KafkaSourceOptions, 'kafka' | 'library'>

/** A consumer's partitions of one topic and the rebalances that took partitions from it, as its library reports them. */
export interface GroupWatch {
  /** The tests' consumer settings, with what the library needs to report to the watch. */
  readonly consumerConfig: KafkaConsumerConfig
  /** Starts watching the consumer a source made with `consumerConfig`. */
  attach(source: { consumer: unknown }): void
  /** The partitions of the topic last assigned, or undefined before the first assignment. */
  assignment(): number[] | undefined
  /** How many times partitions were taken away (a rebalance heard). */
  rebalances(): number
}

/** A source whose client can die as its process would: no commit, no LeaveGroup; the group notices when the session expires. */
export interface CrashableSource {
  readonly source: MessageSource
  crash(): void
  /** Ends the client for good (after a crash, a kafkajs client goes on retrying its refused connections). */
  dispose(): Promise<void>
}

/** One library under test. */
export interface KafkaUnderTest {
  readonly library: KafkaLibrary
  /** A client on the brokers. */
  client(brokers: string[]): KafkaClient
  /** The tests' consumer settings, in the library's shape. */
  readonly consumerConfig: KafkaConsumerConfig
  /** The same, with each batch holding every record fetched for its partition. */
  readonly wholeBatches: KafkaConsumerConfig
  /** The tests' producer settings, in the library's shape. */
  readonly producerConfig: KafkaProducerConfig
  /** Whether the library's idempotent producer runs against the mock cluster (kafkajs's cannot start: docs/queue.md). */
  readonly idempotent: boolean
  /** Watches a member's assignment of `topic`. */
  watch(topic: string): GroupWatch
  /** A source on a client that can crash. */
  crashableSource(brokers: string[], options: SourceChoice): Promise<CrashableSource>
}

/** kafkajs 2.x, from the root dev dependencies. */
export const kafkajsUnderTest: KafkaUnderTest = {
  library: 'kafkajs',
  client: (brokers) => new kafkajs.Kafka({ clientId: 'idem-test', brokers, logLevel: kafkajs.logLevel.NOTHING, retry: RETRY }),
  consumerConfig: CONSUMER_SETTINGS,
  // kafkajs hands over what a fetch returned (up to maxBytesPerPartition).
  wholeBatches: CONSUMER_SETTINGS,
  producerConfig: { createPartitioner: kafkajs.Partitioners.DefaultPartitioner },
  idempotent: false,
  watch(topic) {
    let assignment: number[] | undefined
    let rebalances = 0
    return {
      consumerConfig: CONSUMER_SETTINGS,
      attach({ consumer }) {
        const events = consumer as kafkajs.Consumer
        events.on(events.events.GROUP_JOIN, (event) => (assignment = event.payload.memberAssignment[topic] ?? []))
        events.on(events.events.REBALANCING, () => rebalances++)
      },
      assignment: () => assignment,
      rebalances: () => rebalances,
    }
  },
  async crashableSource(brokers, options) {
    const { kafka, crash } = crashableKafkajs(brokers)
    const source = kafkaSource({ ...options, kafka, library: 'kafkajs' })
    return { source, crash, dispose: () => source.consumer.disconnect() }
  },
}

/**
 * A kafkajs client whose connections can all be cut at once, as when its process dies:
 * `crash()` destroys every socket and refuses new ones, so nothing more reaches the
 * brokers (no commit, no LeaveGroup) and the group coordinator notices only when the
 * session expires.
 */
function crashableKafkajs(brokers: string[]) {
  const sockets = new Set<net.Socket>()
  let crashed = false
  const kafka = new kafkajs.Kafka({
    clientId: 'idem-test',
    brokers,
    logLevel: kafkajs.logLevel.NOTHING,
    retry: RETRY,
    socketFactory: ({ host, port, onConnect }) => {
      if (crashed) {
        const refused = new net.Socket()
        process.nextTick(() => refused.destroy(new Error('the worker crashed')))
        return refused
      }
      const socket = net.connect({ host, port }, onConnect)
      sockets.add(socket)
      socket.once('close', () => sockets.delete(socket))
      return socket
    },
  })
  return {
    kafka,
    crash() {
      crashed = true
      for (const socket of sockets) socket.destroy()
    },
  }
}

/** The parts of `@confluentinc/kafka-javascript` the tests use. */
interface ConfluentModule {
  KafkaJS: {
    Kafka: new (config: { kafkaJS: { clientId: string; brokers: string[]; logLevel: number } }) => KafkaClient
    logLevel: { NOTHING: number }
  }
}

// librdkafka's rebalance events (RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS, __REVOKE_PARTITIONS).
const ASSIGN_PARTITIONS = -175
const REVOKE_PARTITIONS = -174

/**
 * Confluent's client from `CONFLUENT_DIR`; rejects when it is not installed there or does not
 * load (its binding is built for one Node ABI).
 */
export async function loadConfluent(): Promise<KafkaUnderTest> {
  const confluent: ConfluentModule = createRequire(path.join(CONFLUENT_DIR, 'package.json'))('@confluentinc/kafka-javascript')
  const { Kafka, logLevel } = confluent.KafkaJS
  const consumerConfig = { kafkaJS: CONSUMER_SETTINGS }
  return {
    library: 'confluent',
    client: (brokers) => new Kafka({ kafkaJS: { clientId: 'idem-test', brokers, logLevel: logLevel.NOTHING } }),
    consumerConfig,
    // Its batches start at one record and grow with the measured rate, to 32; -1 lifts the bound.
    wholeBatches: { ...consumerConfig, 'js.consumer.max.batch.size': -1 },
    producerConfig: {},
    // librdkafka's idempotent producer runs against librdkafka's own mock cluster.
    idempotent: true,
    watch(topic) {
      let assignment: number[] | undefined
      let rebalances = 0
      const rebalance_cb = (event: { code: number }, partitions: { topic: string; partition: number }[]) => {
        if (event.code === ASSIGN_PARTITIONS) assignment = partitions.filter((p) => p.topic === topic).map((p) => p.partition)
        if (event.code === REVOKE_PARTITIONS) rebalances++
      }
      return { consumerConfig: { ...consumerConfig, rebalance_cb }, attach() {}, assignment: () => assignment, rebalances: () => rebalances }
    },
    async crashableSource(brokers, options) {
      const bridged = bridgedSource(BRIDGE_WORKER, { library: 'confluent', confluentDir: CONFLUENT_DIR, brokers, options })
      return { source: bridged, crash: () => bridged.kill(), dispose: async () => bridged.kill() }
    },
  }
}

const BRIDGE_WORKER = fileURLToPath(new URL('../fixtures/kafka-source-worker.mjs', import.meta.url))

