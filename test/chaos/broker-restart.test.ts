// A broker restarted while the outbox delivers to it and a consumer reads from it. A
// RabbitMQ restart takes tens of seconds here, so a Redis Streams broker of the test's
// own stands in: a redis-server on a free port with AOF and appendfsync always (an
// acknowledged XADD survives the kill), SIGKILLed mid-flow and started again on the
// same files. Every effect queued in the outbox is applied exactly once downstream.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDispatcher, createInbox, createOutbox, startConsumer } from '../../src/queue/index.js'
import { redisStreamDeliverer, redisStreamSource } from '../../src/queue/redis-streams/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { eventually, unique } from '../queue/support.js'
import { freePort } from '../support/free-port.js'
import { sleep } from './support/service.js'
import { report, scale } from './support/table.js'

const MESSAGES = scale(500, 5_000)
const hasRedis = spawnSync('redis-server', ['--version']).status === 0
if (!hasRedis && process.env.CI) throw new Error('redis-server is required in CI for the broker restart')
const db = hasRedis ? await testSchema('idem_chaos_broker') : undefined

describe.skipIf(db === undefined)('a broker restarted mid-flow', () => {
  const { pool, schema } = db as TestSchema
  const dir = mkdtempSync(join(tmpdir(), 'idem-chaos-broker-'))
  let port = 0
  let server: ChildProcess | undefined
  const start = async () => {
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''], { stdio: 'ignore' })
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    probe.on('error', () => {})
    await eventually(async () => probe.connect().then(() => probe.ping()).then(() => true, () => false), 20_000, 'the broker up')
    probe.disconnect()
  }
  const kill = async () => {
    const gone = new Promise((resolve) => server!.once('exit', resolve))
    server!.kill('SIGKILL')
    await gone
  }
  beforeAll(async () => {
    port = await freePort()
    await start()
    await postgresStore({ pool, schema }).migrate()
    await pool.query(`CREATE TABLE "${schema}".applied (message_id text NOT NULL)`)
  })
  afterAll(async () => {
    if (server && server.exitCode === null && server.signalCode === null) await kill()
    rmSync(dir, { recursive: true, force: true })
    await db?.drop()
  })

  it(`${MESSAGES.toLocaleString('en-US')} effects through the outbox and the broker, the broker killed and restarted`, async ({ task }) => {
    const url = `redis://127.0.0.1:${port}`
    const store = postgresStore({ pool, schema })
    const outbox = createOutbox({ store })
    const topic = unique('effects')
    const client = await pool.connect()
    try {
      for (let n = 0; n < MESSAGES; n += 100) {
        await client.query('BEGIN')
        for (let i = n; i < Math.min(n + 100, MESSAGES); i++) await outbox.add(client, { topic, payload: { i }, dedupeKey: `${topic}:${i}` })
        await client.query('COMMIT')
      }
    } finally {
      client.release()
    }
    const options = { maxRetriesPerRequest: 1, connectTimeout: 500, retryStrategy: () => 100 }
    const publisher = new Redis(url, options)
    const reader = new Redis(url, options)
    for (const redis of [publisher, reader]) redis.on('error', () => {})
    let failedPublishes = 0
    const publish = redisStreamDeliverer({ redis: publisher, stream: () => topic })
    const dispatcher = createDispatcher({
      store,
      pollMs: 20,
      batchSize: 50,
      leaseMs: 5_000,
      maxAttempts: 1_000,
      backoff: { baseMs: 50, maxMs: 200 },
      deliver: (row, context) => publish(row, context).catch((error) => {
        failedPublishes++
        throw error
      }),
      onError: () => {},
    })
    const inbox = createInbox<PgClient, { i: number }>({ store, consumer: unique('downstream'), maxAttempts: 1_000 })
    const statuses: Record<string, number> = {}
    const consumer = await startConsumer<PgClient, { i: number }>({
      inbox,
      source: redisStreamSource({ redis: reader, stream: topic, group: 'downstream', consumer: 'c1', blockMs: 50, claimIdleMs: 500, claimEveryMs: 200, onError: () => {} }),
      retry: { baseMs: 10, maxMs: 100 },
      storeRetryMs: 10,
      handler: async (tx, message) => {
        await tx.query(`INSERT INTO "${schema}".applied (message_id) VALUES ($1)`, [message.id])
      },
      onSettled: (result) => void (statuses[result.status] = (statuses[result.status] ?? 0) + 1),
    })
    const applied = async () => Number((await pool.query(`SELECT count(DISTINCT message_id)::int AS n FROM "${schema}".applied`)).rows[0].n)
    dispatcher.start()
    await eventually(async () => (await applied()) >= MESSAGES * 0.3, 60_000, 'a third applied')
    await kill()
    await sleep(1_000)
    await start()
    const restartedAt = performance.now()
    const before = await applied()
    await eventually(async () => (await applied()) > before, 30_000, 'progress after the restart')
    const recoveryMs = performance.now() - restartedAt
    await eventually(async () => (await applied()) === MESSAGES, 120_000, 'every effect applied')
    await eventually(async () => Number(((await reader.xpending(topic, 'downstream')) as [number])[0]) === 0, 30_000, 'every delivery acknowledged')
    await dispatcher.stop()
    await consumer.stop()
    publisher.disconnect()
    reader.disconnect()
    const { rows } = await pool.query(`SELECT count(*)::int AS rows, count(DISTINCT message_id)::int AS ids FROM "${schema}".applied`)
    const undelivered = Number((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_outbox WHERE topic = $1 AND delivered_at IS NULL`, [topic])).rows[0].n)
    report(task, {
      scenario: 'server: broker (Redis Streams of its own, AOF) killed and restarted',
      runs: MESSAGES,
      unit: 'effects',
      duplicates: rows[0].rows - rows[0].ids,
      lost: MESSAGES - rows[0].ids + undelivered,
      unexpected5xx: 0,
      maxRecoveryMs: recoveryMs,
      notes: `down 1 s; ${failedPublishes} publishes failed and were retried, ${statuses['duplicate'] ?? 0} redeliveries dropped by the inbox`,
    })
    expect(rows[0]).toEqual({ rows: MESSAGES, ids: MESSAGES })
    expect(undelivered).toBe(0)
  }, 300_000)
})
