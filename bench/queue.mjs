// bench:queue: messages/s through the inbox vs the same consumer without it, on
// RabbitMQ, Redis Streams and Kafka (librdkafka's mock cluster, run by kcat: no Kafka
// server can be installed here, so the Kafka row measures the client and idem against an
// in-memory broker, not a real one's disk and replication). Each consumer handles a message with one Postgres
// transaction inserting one row; the inbox variant records the message id in that
// same transaction. Two more measure what any such inbox must pay: the dedupe floor
// records ids in a narrow table of its own (see dedupeFloor), and the hand-written one
// writes the inbox's own record by hand, without idem (see handWritten). A backlog is
// published first, then each variant consumes it for
// BENCH_SECONDS; variants are interleaved over BENCH_ROUNDS (every other round in
// reverse order) and the medians compared. BENCH_BROKERS (e.g. `rabbitmq,redis`) runs only
// those brokers' rows, printing the ratios it has (for profiling one broker's consumer).
import amqplib from 'amqplib'
import { Redis } from 'ioredis'
import kafkajs from 'kafkajs'
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createInbox, DEFAULT_INBOX_RETENTION_MS, startConsumer } from '../dist/queue/index.js'
import { rabbitmqSource } from '../dist/queue/rabbitmq/index.js'
import { kafkaSource } from '../dist/queue/kafka/index.js'
import { redisStreamSource } from '../dist/queue/redis-streams/index.js'
import { inboxMarkByHand, queueBenchDatabase } from './queue-database.mjs'
import { cpuLedger, interleaved, ratio } from './support.mjs'

const AMQP_URL = process.env.IDEM_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const REDIS_URL = process.env.IDEM_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6)
const CONCURRENCY = 16
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 30_000)
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 1_000)
const BROKERS = process.env.BENCH_BROKERS ? process.env.BENCH_BROKERS.split(',') : undefined

const database = await queueBenchDatabase('idem_bench_queue', CONCURRENCY + 2)
const { pool, schema, store, insert } = database
await pool.query(`CREATE TABLE ${schema}.seen (id text PRIMARY KEY)`)

/**
 * A consumer without the inbox: `transaction(client, body, id)` runs the message's
 * transaction on a pool client (BEGIN to COMMIT), and the message is acked after it.
 */
function plainConsumer(source, transaction) {
  return source.subscribe(async (delivery) => {
    const body = JSON.parse(Buffer.from(delivery.data).toString('utf8'))
    const client = await pool.connect()
    try {
      await transaction(client, body, delivery.id)
    } finally {
      client.release()
    }
    await delivery.ack()
  }).then((subscription) => ({ stop: () => subscription.close() }))
}

/** The bare consumer: the same transaction and insert, acked after commit, no inbox. */
function bare(source) {
  return plainConsumer(source, async (client, body, id) => {
    await client.query('BEGIN')
    await insert(client, body, id)
    await client.query('COMMIT')
  })
}

// Pool clients that have the hand-written record's statement prepared (it outlives each run's consumer).
const prepared = new WeakSet()

/**
 * The bare consumer that first records the message id by hand: `record(literal)` is an
 * `INSERT … ON CONFLICT DO NOTHING` sent in the round trip of BEGIN (after `prepare`,
 * once per connection, if given), and the handler's insert runs only if it inserted a
 * row. No expiry checks, no wait limit, no failure counting: not a usable inbox, a
 * measure of what the recording itself costs.
 */
function recordingConsumer(source, record, prepare) {
  return plainConsumer(source, async (client, body, id) => {
    const first = prepare === undefined || prepared.has(client) ? '' : `${prepare}; `
    const results = await client.query(`BEGIN; ${first}${record(client.escapeLiteral(id))}`)
    if (prepare !== undefined) prepared.add(client)
    if (results[results.length - 1].rowCount === 1) await insert(client, body, id)
    await client.query('COMMIT')
  })
}

/** The floor of any inbox that records ids in the handler's transaction: a narrow table of ids. */
const dedupeFloor = (source) => recordingConsumer(source, (id) => `INSERT INTO ${schema}.seen (id) VALUES (${id}) ON CONFLICT DO NOTHING`)

const inboxMark = inboxMarkByHand(schema)
/**
 * The record the inbox writes (a row of idem_inbox: consumer, id, expiry, under the
 * id's advisory lock), written by hand with the store's own statement: what the inbox's
 * row costs by itself, so that the rest of the inbox's cost is idem's code.
 */
const handWritten = (source) =>
  recordingConsumer(source, (id) => inboxMark.execute(`'claims-intake'`, id, DEFAULT_INBOX_RETENTION_MS), inboxMark.prepare)

/** The same consumer through the inbox. */
function withInbox(source) {
  // A consumer name of a realistic length; each run starts from an empty idem_inbox (see measure).
  const inbox = createInbox({ store, consumer: 'claims-intake' })
  return startConsumer({ inbox, source, handler: (tx, message) => insert(tx, message.body, message.id) })
}

let checkpoints = true
async function checkpoint() {
  if (!checkpoints) return
  try {
    await pool.query('CHECKPOINT')
  } catch (error) {
    checkpoints = false
    console.warn(`  (no CHECKPOINT between runs: ${error.message}; results vary more)`)
  }
}

// Every run's messages get ids of their own, as a broker's new messages do: reusing the
// last run's ids (whose records were truncated) would send the inbox through its path for
// retries of keys it recorded, an extra round trip that no new message pays.
let runs = 0

/**
 * Runs one variant for `seconds` over a fresh backlog; returns messages/s. The machine's
 * CPU during consumption goes to `machine` (a cpuLedger) under `name`.
 */
async function measure(broker, variant, seconds, machine, name) {
  const { source, publishBacklog, cleanup } = await broker.fresh(`r${++runs}`)
  await publishBacklog(BACKLOG)
  // Let the broker finish with the publishing (and with the previous run's queue) first.
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
  let done = 0
  // Every variant starts from empty tables (the inbox's ids, like the floor's, do not
  // pile up across runs) and from a checkpoint: the first write to each page after a
  // checkpoint logs the whole page, so a checkpoint falling inside one variant's run
  // would slow that variant alone.
  await pool.query(`TRUNCATE ${schema}.claims, ${schema}.seen, ${schema}.idem_inbox`)
  await checkpoint()
  const consume = async () => {
    let started = performance.now()
    const consumer = await variant(source)
    // A Kafka consumer's subscribe resolves once it has joined its group (seconds on the mock
    // cluster, which delays a new group's first rebalance): its clock starts there.
    let before = 0
    if (broker.joinsGroup) {
      started = performance.now()
      before = Number((await pool.query(`SELECT count(*) AS n FROM ${schema}.claims`)).rows[0].n)
    }
    const until = started + seconds * 1000
    while (performance.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      done = Number((await pool.query(`SELECT count(*) AS n FROM ${schema}.claims`)).rows[0].n)
      if (done >= BACKLOG) break
    }
    const elapsed = (performance.now() - started) / 1000
    await consumer.stop()
    done -= before
    return { value: elapsed, operations: done }
  }
  const elapsed = await machine.record(name, consume)
  await cleanup()
  if (done >= BACKLOG) console.warn(`  (${broker.name}: the backlog of ${BACKLOG} ran out; raise BENCH_BACKLOG)`)
  return done / elapsed
}

const rabbit = {
  name: 'rabbitmq',
  async fresh(run) {
    const connection = await amqplib.connect(AMQP_URL)
    const channel = await connection.createChannel()
    const queue = `idem_bench_${randomUUID()}`
    await channel.assertQueue(queue, { durable: false })
    return {
      source: rabbitmqSource({ channel, queue, prefetch: CONCURRENCY }),
      async publishBacklog(n) {
        const publisher = await connection.createConfirmChannel()
        for (let i = 0; i < n; i++) {
          if (!publisher.sendToQueue(queue, Buffer.from(JSON.stringify({ amount: i % 100 })), { messageId: `${run}-${i}` })) {
            await new Promise((resolve) => publisher.once('drain', resolve))
          }
        }
        await publisher.waitForConfirms()
        await publisher.close()
      },
      async cleanup() {
        await channel.deleteQueue(queue).catch(() => {})
        await connection.close()
      },
    }
  },
}

const redisBroker = {
  name: 'redis',
  async fresh(run) {
    const redis = new Redis(REDIS_URL)
    const stream = `idem:bench:${randomUUID()}`
    return {
      source: redisStreamSource({ redis, stream, group: 'bench', consumer: 'c1', count: CONCURRENCY, blockMs: 100 }),
      async publishBacklog(n) {
        for (let start = 0; start < n; start += 1000) {
          const pipeline = redis.pipeline()
          for (let i = start; i < Math.min(n, start + 1000); i++) pipeline.xadd(stream, '*', 'id', `${run}-${i}`, 'body', JSON.stringify({ amount: i % 100 }))
          await pipeline.exec()
        }
      },
      async cleanup() {
        await redis.del(stream)
        redis.disconnect()
      },
    }
  },
}

/**
 * librdkafka's mock cluster through kcat (up from the Kafka row to the end, bounded by
 * `timeout`); its bootstrap addresses are in kcat's log line.
 */
async function kafkaMock() {
  const child = spawn('timeout', ['3600', 'kcat', '-q', '-b', '127.0.0.1', '-X', 'test.mock.num.brokers=3', '-C', '-t', 'idem-bench-warmup'], { stdio: ['ignore', 'ignore', 'pipe'] })
  const brokers = await new Promise((resolve, reject) => {
    let log = ''
    const timer = setTimeout(() => reject(new Error(`kcat printed no mock cluster address (apt-get install kcat): ${log.slice(0, 300)}`)), 10_000)
    child.once('error', reject)
    child.stderr.on('data', (chunk) => {
      log += chunk
      const match = /replaced with (\S+)/.exec(log)
      if (match) {
        clearTimeout(timer)
        resolve(match[1].split(','))
      }
    })
  })
  return { brokers, stop: () => child.kill('SIGTERM') }
}

// Started for the Kafka row only, so it does not idle on the cores during the others.
let mock
const kafkaBroker = {
  name: 'kafka',
  joinsGroup: true,
  async fresh(run) {
    mock ??= await kafkaMock()
    const kafka = new kafkajs.Kafka({ clientId: 'idem-bench', brokers: mock.brokers, logLevel: kafkajs.logLevel.NOTHING })
    const topic = `idem_bench_${randomUUID()}`
    const producer = kafka.producer({ createPartitioner: kafkajs.Partitioners.DefaultPartitioner })
    await producer.connect()
    return {
      // 4 partitions (the mock's default) × 4 records each at once = CONCURRENCY in flight, as for the other brokers.
      source: kafkaSource({
        kafka,
        groupId: `bench-${run}`,
        topics: [topic],
        idempotent: false,
        concurrency: CONCURRENCY / 4,
        partitionsConsumedConcurrently: 4,
        consumerConfig: { maxWaitTimeInMs: 100 },
      }),
      async publishBacklog(n) {
        for (let start = 0; start < n; start += 1000) {
          const messages = []
          for (let i = start; i < Math.min(n, start + 1000); i++) messages.push({ key: `${run}-${i}`, value: JSON.stringify({ amount: i % 100 }), headers: { 'idem-id': `${run}-${i}` } })
          await producer.send({ topic, messages })
        }
      },
      async cleanup() {
        // The mock cluster cannot delete topics; it forgets them when the bench ends.
        await producer.disconnect()
      },
    }
  },
}

const results = {}
for (const broker of [rabbit, redisBroker, kafkaBroker].filter((b) => BROKERS === undefined || BROKERS.includes(b.name))) {
  const variants = { bare, dedupe_floor: dedupeFloor, hand_written: handWritten, inbox: withInbox }
  // Warm-up, not counted (its ledger is never printed): the JIT, the pool's connections,
  // the store's prepared statements.
  const warmUp = cpuLedger({})
  for (const [name, variant] of Object.entries(variants)) await measure(broker, variant, 1, warmUp, name)
  const machine = cpuLedger({ [process.pid]: 'consumer' })
  const rates = await interleaved(variants, ROUNDS, (variant, name) => measure(broker, variant, SECONDS, machine, name))
  results[broker.name] = rates
  console.log(
    `${broker.name}: bare ${rates.bare.toFixed(0)} msg/s, dedupe floor ${rates.dedupe_floor.toFixed(0)} msg/s, ` +
      `hand-written record ${rates.hand_written.toFixed(0)} msg/s, inbox ${rates.inbox.toFixed(0)} msg/s ` +
      `(${CONCURRENCY} in flight, ${SECONDS} s × ${ROUNDS} rounds)`,
  )
  machine.print('message')
}
await database.drop()
mock?.stop()
// Grouped by measure, as docs/benchmarks.md lists them; the measure (inbox vs bare) last.
for (const [measure, over] of [['dedupe_floor', 'bare'], ['hand_written', 'bare'], ['inbox', 'hand_written'], ['inbox', 'bare']]) {
  for (const [broker, rates] of Object.entries(results)) ratio(`queue.${broker}.${measure}_vs_${over}`, rates[measure] / rates[over])
}
