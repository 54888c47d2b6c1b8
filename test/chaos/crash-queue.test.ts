// The queue side of the crash matrix. Inbox: a consumer SIGKILLed after its handler's
// write (inside the transaction) or after the commit and before the ack; the broker
// redelivers to a new process, and the ledger holds the message exactly once.
// Outbox: a dispatcher SIGKILLed mid-delivery (the receiver got the row, the row is not
// marked delivered); a new dispatcher sends it again after the lease, the receiver
// drops the repeat by its dedupe key, and every row is delivered.
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutbox } from '../../src/queue/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { REDIS_URL, startFixture, testRedis } from '../leased/support.js'
import { eventually, unique } from '../queue/support.js'
import { report, scale } from './support/table.js'

const db = await testSchema('idem_chaos_queue')
const redis = await testRedis('chaos-queue')
const streams: string[] = []
const REPEATS = scale(2, 10)

describe.skipIf(db === undefined || redis === undefined)('crash matrix, queue side', () => {
  const { pool, schema } = db as TestSchema
  beforeAll(async () => {
    await postgresStore({ pool, schema }).migrate()
    await pool.query(`CREATE TABLE "${schema}".ledger (message_id text NOT NULL, amount integer NOT NULL)`)
    await pool.query(`CREATE TABLE "${schema}".received (dedupe_key text NOT NULL)`)
    await pool.query(`CREATE TABLE "${schema}".applied (dedupe_key text PRIMARY KEY)`)
  })
  afterAll(async () => {
    if (streams.length > 0) await redis!.client.del(...streams)
    await redis?.drop()
    await db?.drop()
  })

  it('inbox: killed after the handler\'s write and before the ack, the message is applied once', async ({ task }) => {
    const admin = redis!.client as Redis
    let duplicates = 0
    let lost = 0
    let kills = 0
    let maxRecoveryMs = 0
    const statuses: Record<string, number> = {}
    for (const boundary of ['after-handler-write', 'before-ack']) {
      for (let round = 0; round < REPEATS; round++) {
        const stream = unique('idem:chaos:inbox')
        streams.push(stream, `${stream}:dead`)
        const id = `msg-${randomUUID()}`
        const inboxName = unique('ledger')
        await admin.xadd(stream, '*', 'id', id, 'body', JSON.stringify({ amount: 7 }))
        const base = { role: 'consumer', pgUrl: PG_URL, schema, redisUrl: REDIS_URL, stream, inboxName }
        const doomed = startFixture('chaos-queue.mjs', { ...base, boundary, consumer: 'first' })
        expect(await doomed.line('KILLED')).toBe(boundary)
        expect(await doomed.exited).toBe('SIGKILL')
        kills++
        const killedAt = performance.now()
        const restarted = startFixture('chaos-queue.mjs', { ...base, consumer: 'second' })
        const status = await restarted.line('SETTLED')
        statuses[status] = (statuses[status] ?? 0) + 1
        const pending = async () => Number(((await admin.xpending(stream, 'workers')) as [number])[0])
        await eventually(async () => (await pending()) === 0, 20_000, 'the redelivery acknowledged')
        maxRecoveryMs = Math.max(maxRecoveryMs, performance.now() - killedAt)
        restarted.child.kill('SIGTERM')
        await restarted.exited
        const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".ledger WHERE message_id = $1`, [id])
        if (rows[0].n > 1) duplicates += rows[0].n - 1
        if (rows[0].n === 0) lost++
        expect(rows[0].n, boundary).toBe(1)
        // Rolled back with the handler: it runs again. Committed before the ack: a duplicate.
        expect(status, boundary).toBe(boundary === 'before-ack' ? 'duplicate' : 'processed')
      }
    }
    report(task, {
      scenario: 'crash matrix: inbox (Redis Streams, Postgres)',
      runs: kills,
      unit: 'kills',
      duplicates,
      lost,
      unexpected5xx: 0,
      maxRecoveryMs,
      notes: `after the write → ${statuses['processed'] ?? 0} processed, before the ack → ${statuses['duplicate'] ?? 0} duplicate`,
    })
  }, 300_000)

  it('outbox: a dispatcher killed mid-delivery; every row delivered, each applied once', async ({ task }) => {
    const outbox = createOutbox({ store: postgresStore({ pool, schema }) })
    const ROWS = 5
    let kills = 0
    let duplicates = 0
    let lost = 0
    let sends = 0
    let maxRecoveryMs = 0
    for (let round = 0; round < REPEATS; round++) {
      const topic = unique('chaos')
      const keys = Array.from({ length: ROWS }, (_, n) => `${topic}:${n}`)
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        for (const dedupeKey of keys) await outbox.add(client, { topic, payload: { dedupeKey }, dedupeKey })
        await client.query('COMMIT')
      } finally {
        client.release()
      }
      const base = { role: 'dispatcher', pgUrl: PG_URL, schema, leaseMs: 600 }
      const doomed = startFixture('chaos-queue.mjs', { ...base, boundary: 'mid-delivery', killAt: 1 + (round % ROWS) })
      expect(await doomed.line('KILLED')).toBe('mid-delivery')
      expect(await doomed.exited).toBe('SIGKILL')
      kills++
      const killedAt = performance.now()
      const restarted = startFixture('chaos-queue.mjs', base)
      const undelivered = async () =>
        Number((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_outbox WHERE topic = $1 AND delivered_at IS NULL`, [topic])).rows[0].n)
      await eventually(async () => (await undelivered()) === 0, 30_000, 'every row delivered')
      maxRecoveryMs = Math.max(maxRecoveryMs, performance.now() - killedAt)
      restarted.child.kill('SIGTERM')
      await restarted.exited
      const { rows } = await pool.query(
        `SELECT a.dedupe_key, (SELECT count(*)::int FROM "${schema}".received r WHERE r.dedupe_key = a.dedupe_key) AS sends
         FROM "${schema}".applied a WHERE a.dedupe_key LIKE $1`,
        [`${topic}:%`],
      )
      lost += ROWS - rows.length
      sends += rows.reduce((sum, row) => sum + row.sends, 0)
      expect(rows).toHaveLength(ROWS)
      const rowsOf = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_outbox WHERE topic = $1`, [topic])
      duplicates += rowsOf.rows[0].n - ROWS
      expect(rowsOf.rows[0].n).toBe(ROWS)
    }
    report(task, {
      scenario: 'crash matrix: outbox dispatcher (Postgres)',
      runs: kills,
      unit: 'kills',
      duplicates,
      lost,
      unexpected5xx: 0,
      maxRecoveryMs,
      notes: `${kills * ROWS} rows, ${sends} sends (the repeat after each kill dropped by the receiver's dedupe key)`,
    })
  }, 300_000)
})
