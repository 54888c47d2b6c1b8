// Load with lost answers: intents from 50 concurrent clients (idem's createClient,
// at most 5 retries each) through the HTTP fault proxy, which drops 30% of the answers
// after the service committed. A client that runs out of attempts comes back later
// with the same key, as a user pressing "retry" would. Each intent writes an order and
// queues a shipment; the outbox is delivered to a Redis stream with duplicate
// deliveries on purpose (rows published twice, deliveries that fail after publishing),
// and a consumer behind the inbox applies each shipment. Afterwards every intent has
// exactly one order, every answer names it, and every shipment is applied once.
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient, RetriesExhaustedError } from '../../src/client/index.js'
import { createDispatcher, createInbox, startConsumer, type OutboxRow } from '../../src/queue/index.js'
import { redisStreamDeliverer, redisStreamSource } from '../../src/queue/redis-streams/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { seededRandom, startFaultProxy } from '../../src/testing/index.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { REDIS_URL, testRedis } from '../leased/support.js'
import { eventually, unique } from '../queue/support.js'
import { prepareSchema, startService } from './support/service.js'
import { report, scale } from './support/table.js'

const INTENTS = scale(1_000, 10_000)
const CLIENTS = 50
const DROP = 0.3
const SEED = Number(process.env.IDEM_CHAOS_SEED ?? 20261201)

const db = await testSchema('idem_chaos_load', 12)
const redis = await testRedis('chaos-load')

describe.skipIf(db === undefined || redis === undefined)('load: lost answers and duplicate deliveries', () => {
  const { pool, schema } = db as TestSchema
  const stream = unique('idem:chaos:shipments')
  beforeAll(async () => {
    await prepareSchema(pool, schema)
    await pool.query(`CREATE TABLE "${schema}".shipments (intent text NOT NULL)`)
  })
  afterAll(async () => {
    await redis?.client.del(stream, `${stream}:dead`)
    await redis?.drop()
    await db?.drop()
  })

  it(`${INTENTS.toLocaleString('en-US')} intents, ${CLIENTS} clients, ${DROP * 100}% of answers dropped, up to 5 retries`, async ({ task }) => {
    const service = await startService({ mode: 'postgres', schema, pgUrl: PG_URL })
    const proxy = await startFaultProxy({ target: service.url, dropResponseProbability: DROP, seed: SEED, droppable: (r) => r.method === 'POST' })
    const store = postgresStore({ pool, schema })

    // The queue side, running during the load.
    const publisher = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    const publish = redisStreamDeliverer({ redis: publisher, stream: () => stream })
    const chance = seededRandom(SEED + 1)
    let published = 0
    let failedAfterPublish = 0
    const dispatcher = createDispatcher({
      store,
      pollMs: 20,
      batchSize: 100,
      backoff: { baseMs: 0, maxMs: 10 },
      deliver: async (row: OutboxRow, context) => {
        await publish(row, context)
        published++
        const draw = chance()
        if (draw < 0.2) {
          await publish(row, context)
          published++
        } else if (draw < 0.25) {
          failedAfterPublish++
          throw new Error('the broker confirmed too late: the dispatcher retries this row')
        }
      },
    })
    const consumerRedis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    const inbox = createInbox<PgClient, { intent: string }>({ store, consumer: unique('shipping') })
    const statuses: Record<string, number> = {}
    const consumer = await startConsumer<PgClient, { intent: string }>({
      inbox,
      source: redisStreamSource({ redis: consumerRedis, stream, group: 'shipping', consumer: 'c1', blockMs: 50, claimIdleMs: 1_000, claimEveryMs: 200 }),
      retry: { baseMs: 10, maxMs: 100 },
      storeRetryMs: 10,
      handler: async (tx, message) => {
        await tx.query(`INSERT INTO "${schema}".shipments (intent) VALUES ($1)`, [message.body.intent])
      },
      onSettled: (result) => void (statuses[result.status] = (statuses[result.status] ?? 0) + 1),
    })
    dispatcher.start()

    let conflicts = 0
    let unavailable = 0
    let unexpected = 0
    const random = seededRandom(SEED + 2)
    const client = createClient({
      maxAttempts: 6,
      backoff: { baseMs: 5, maxMs: 100 },
      attemptTimeoutMs: 15_000,
      deadlineMs: 60_000,
      random,
      onRetry: (event) => {
        if (event.status === 409) conflicts++
        if (event.status === 503) unavailable++
      },
    })
    const answers = new Map<string, number>()
    let attempts = 0
    let replays = 0
    let cameBack = 0
    const intents = Array.from({ length: INTENTS }, () => ({ intent: randomUUID(), key: randomUUID() }))
    let next = 0
    const started = performance.now()
    async function oneClient(): Promise<void> {
      for (let i = next++; i < intents.length; i = next++) {
        const { intent, key } = intents[i]!
        const body = JSON.stringify({ intent, amount: (i % 97) + 1 })
        for (let call = 0; ; call++) {
          try {
            const result = await client.fetch(`${proxy.url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-account': `acct-${i % 7}` }, body }, { key })
            attempts += result.attempts
            if (result.replayed) replays++
            if (result.response.status !== 201) unexpected++
            answers.set(intent, ((await result.response.json()) as { orderId: number }).orderId)
            break
          } catch (error) {
            if (!(error instanceof RetriesExhaustedError) || call >= 3) throw error
            attempts += 6
            cameBack++
          }
        }
      }
    }
    await Promise.all(Array.from({ length: CLIENTS }, oneClient))
    const loadMs = performance.now() - started

    // The queue side catches up: every row delivered, every shipment applied.
    const shipped = async () => Number((await pool.query(`SELECT count(DISTINCT intent)::int AS n FROM "${schema}".shipments`)).rows[0].n)
    await eventually(async () => (await shipped()) === INTENTS, 120_000, 'every shipment applied')
    await eventually(
      async () => Number((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_outbox WHERE delivered_at IS NULL`)).rows[0].n) === 0,
      60_000,
      'the outbox delivered',
    )
    await dispatcher.stop()
    await eventually(async () => Number(((await consumerRedis.xpending(stream, 'shipping')) as [number])[0]) === 0, 30_000, 'every delivery acknowledged')
    await consumer.stop()
    publisher.disconnect()
    consumerRedis.disconnect()
    const stats = proxy.stats
    await proxy.close()
    const serviceAlive = service.alive()
    await service.stop()

    const orders = await pool.query(`SELECT intent, count(*)::int AS n, min(id) AS id FROM "${schema}".orders GROUP BY intent`)
    const byIntent = new Map(orders.rows.map((row) => [row.intent as string, row as { n: number; id: number }]))
    let duplicates = 0
    let lost = 0
    let wrongAnswers = 0
    for (const { intent } of intents) {
      const row = byIntent.get(intent)
      if (row === undefined) lost++
      else {
        duplicates += row.n - 1
        if (answers.get(intent) !== row.id) wrongAnswers++
      }
    }
    const shipments = await pool.query(`SELECT count(*)::int AS rows, count(DISTINCT intent)::int AS intents FROM "${schema}".shipments`)
    const queueDuplicates = shipments.rows[0].rows - shipments.rows[0].intents
    const row = {
      scenario: `load: ${CLIENTS} clients, ${DROP * 100}% answers dropped, duplicate deliveries`,
      runs: INTENTS,
      unit: 'intents',
      duplicates: duplicates + queueDuplicates + wrongAnswers,
      lost: lost + (INTENTS - shipments.rows[0].intents),
      unexpected5xx: unexpected,
      crashes: serviceAlive ? 0 : 1,
      notes:
        `${attempts.toLocaleString('en-US')} attempts (${stats.dropped.toLocaleString('en-US')} answers dropped), ${replays.toLocaleString('en-US')} replays, ` +
        `${conflicts} 409s, ${unavailable} 503s, ${cameBack} came back after 6 attempts; ` +
        `effects applied ${orders.rows.length.toLocaleString('en-US')} orders / ${shipments.rows[0].intents.toLocaleString('en-US')} shipments; ` +
        `queue: ${published.toLocaleString('en-US')} publishes, ${failedAfterPublish} failed after publishing, ${statuses['duplicate'] ?? 0} duplicates dropped by the inbox; ` +
        `${Math.round((INTENTS / loadMs) * 1000)} intents/s`,
    }
    report(task, row)
    expect(serviceAlive).toBe(true)
    expect({ duplicates, lost, wrongAnswers, queueDuplicates, unexpected }).toEqual({ duplicates: 0, lost: 0, wrongAnswers: 0, queueDuplicates: 0, unexpected: 0 })
    expect(shipments.rows[0].intents).toBe(INTENTS)
    expect(stats.dropped).toBeGreaterThan(INTENTS * 0.2)
    expect(statuses['duplicate'] ?? 0).toBeGreaterThan(0)
  }, 600_000)
})
