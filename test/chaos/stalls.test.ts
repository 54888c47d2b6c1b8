// Stalls and clocks. A holder whose event loop is blocked past its lease while another
// process takes its key over starts nothing after waking. A delivery hung past its
// deadline (ignoring its signal) keeps its row: two dispatchers never send a row at
// once. And the app's clock ahead of or behind the database's by minutes changes no
// answer: leases and expiry are judged by the store's clock (Postgres now() and
// clock_timestamp(), Redis TIME), never the app's.
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLeasedIdem, LeaseLostError, type LeasedStore } from '../../src/index.js'
import { createDispatcher, createOutbox, type OutboxRow } from '../../src/queue/index.js'
import { leasedPostgresStore, postgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { REDIS_URL, testRedis } from '../leased/support.js'
import { eventually, unique } from '../queue/support.js'
import { postOrder, prepareSchema, sleep, startService, type Mode } from './support/service.js'
import { report, scale } from './support/table.js'

const LEASE_MS = 300
const REPEATS = scale(2, 10)
const takeover = fileURLToPath(new URL('../fixtures/takeover.mjs', import.meta.url))
const db = await testSchema('idem_chaos_stalls', 6)
const redis = await testRedis('chaos-stalls')
if (redis === undefined && process.env.CI) throw new Error('Redis is required in CI')

describe.skipIf(db === undefined)('stalls and clocks', () => {
  const { pool, schema } = db as TestSchema
  beforeAll(async () => {
    await prepareSchema(pool, schema)
    await pool.query(`CREATE TABLE "${schema}".emails (key text NOT NULL, sent_by text NOT NULL)`)
  })
  afterAll(async () => {
    await redis?.drop()
    await db?.drop()
  })

  it('a holder blocked past its lease while another process takes over starts nothing after waking', async ({ task }) => {
    const stores: Array<[string, () => LeasedStore, object]> = [['postgres', () => leasedPostgresStore({ pool, schema }), { store: 'postgres' }]]
    if (redis) stores.push(['redis', () => redisStore({ client: redis.client, prefix: redis.prefix }), { store: 'redis', redisUrl: REDIS_URL, prefix: redis.prefix }])
    let runs = 0
    let duplicates = 0
    let lost = 0
    for (const [, makeStore, storeConfig] of stores) {
      for (let round = 0; round < REPEATS; round++) {
        const key = `order-${randomUUID()}`
        const idem = createLeasedIdem({ store: makeStore(), leaseMs: LEASE_MS })
        let ranAfterWaking = false
        const run = idem.run({ scope: 'blocked', key, input: { amount: 1000 } }, async (ctx) => {
          await ctx.step('charge', async () => ({ chargeId: 'ch_1' }))
          // execFileSync blocks this event loop: no timer, no heartbeat, until the taker is done.
          execFileSync(process.execPath, [takeover, JSON.stringify({ ...storeConfig, pgUrl: PG_URL, schema, key, afterMs: LEASE_MS * 2 })], { timeout: 30_000 })
          await ctx.step('email', async () => {
            ranAfterWaking = true
            await pool.query(`INSERT INTO "${schema}".emails (key, sent_by) VALUES ($1, 'blocked holder')`, [key])
          })
          return { by: 'blocked holder' }
        })
        await expect(run).rejects.toBeInstanceOf(LeaseLostError)
        expect(ranAfterWaking).toBe(false)
        const { rows } = await pool.query(`SELECT sent_by FROM "${schema}".emails WHERE key = $1`, [key])
        duplicates += Math.max(0, rows.length - 1)
        if (rows.length === 0) lost++
        expect(rows.map((row) => row.sent_by)).toEqual(['taker'])
        expect(await idem.run({ scope: 'blocked', key, input: { amount: 1000 } }, async () => ({ by: 'never' }))).toEqual({ value: { by: 'taker' }, replayed: true, stored: true })
        runs++
      }
    }
    report(task, { scenario: 'stall: event loop blocked past the lease (Postgres, Redis)', runs, unit: 'takeovers', duplicates, lost, unexpected5xx: 0, notes: 'the woken holder ran no step; the taker\'s outcome replayed' })
  }, 300_000)

  it('a delivery hung past its deadline keeps its row: two dispatchers never send it at once', async ({ task }) => {
    const ROWS = scale(10, 50)
    const topic = unique('hung')
    const outbox = createOutbox({ store: postgresStore({ pool, schema }) })
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      for (let n = 0; n < ROWS; n++) await outbox.add(client, { topic, payload: { n }, dedupeKey: `${topic}:${n}` })
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    const now = new Map<string, number>()
    const sends = new Map<string, number>()
    let overlapping = 0
    let signalled = 0
    // Every first attempt ignores its signal and hangs for three leases, then succeeds.
    const deliver = async (row: OutboxRow, { signal }: { signal: AbortSignal }) => {
      if (row.topic !== topic) return
      const at = (now.get(row.dedupeKey) ?? 0) + 1
      now.set(row.dedupeKey, at)
      if (at > 1) overlapping++
      sends.set(row.dedupeKey, (sends.get(row.dedupeKey) ?? 0) + 1)
      try {
        if (row.attempt === 1) {
          signal.addEventListener('abort', () => signalled++)
          await sleep(LEASE_MS * 3)
        }
      } finally {
        now.set(row.dedupeKey, now.get(row.dedupeKey)! - 1)
      }
    }
    const second = new pg.Pool({ connectionString: PG_URL, max: 4, connectionTimeoutMillis: 5_000 })
    const dispatchers = [postgresStore({ pool, schema }), postgresStore({ pool: second, schema })].map((store) =>
      createDispatcher({ store, deliver, leaseMs: LEASE_MS, pollMs: 20, backoff: { baseMs: 0, maxMs: 0 }, batchSize: 5 }),
    )
    const started = performance.now()
    for (const dispatcher of dispatchers) dispatcher.start()
    const undelivered = async () =>
      Number((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_outbox WHERE topic = $1 AND delivered_at IS NULL`, [topic])).rows[0].n)
    await eventually(async () => (await undelivered()) === 0, 60_000, 'every hung row delivered')
    const elapsed = performance.now() - started
    for (const dispatcher of dispatchers) await dispatcher.stop()
    await second.end()
    const duplicates = [...sends.values()].reduce((sum, n) => sum + n - 1, 0)
    report(task, {
      scenario: 'stall: deliveries hung past their deadline, 2 dispatchers',
      runs: ROWS,
      unit: 'rows',
      duplicates: duplicates + overlapping,
      lost: ROWS - sends.size,
      unexpected5xx: 0,
      notes: `${signalled} signals fired at the deadline, 0 sends overlapped, each row sent once (kept leased while it hung), all delivered in ${(elapsed / 1000).toFixed(1)} s`,
    })
    expect(overlapping).toBe(0)
    expect(duplicates).toBe(0)
    expect(signalled).toBeGreaterThan(0)
  }, 120_000)

  it('the app clock ±10 minutes from the database: expiry and leases follow the store\'s clock', async ({ task, skip }) => {
    if (redis === undefined) return skip('Redis is unreachable')
    const TEN_MINUTES = 10 * 60_000
    let checks = 0
    let duplicates = 0
    const modes: Mode[] = ['postgres', 'leased-redis', 'leased-postgres']
    for (const mode of modes) {
      const config = { mode, schema, pgUrl: PG_URL, redisUrl: REDIS_URL, prefix: redis.prefix, leaseMs: 1_000, ttlMs: 60_000 }
      const ahead = await startService(config, { clockOffsetMs: TEN_MINUTES })
      const behind = await startService(config, { clockOffsetMs: -TEN_MINUTES })
      try {
        expect(Number(await ahead.fixture.line('CLOCK')) - Date.now()).toBeGreaterThan(9 * 60_000)
        expect(Date.now() - Number(await behind.fixture.line('CLOCK'))).toBeGreaterThan(9 * 60_000)
        const effects = async (intent: string) => {
          const table = mode === 'postgres' ? 'orders' : 'charges'
          return Number((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".${table} WHERE intent = $1`, [intent])).rows[0].n)
        }
        // A record written by a clock 10 minutes behind, with a 60 s retention, is live
        // for a clock 10 minutes ahead, and the other way round.
        for (const [writer, reader] of [[behind, ahead], [ahead, behind]] as const) {
          const intent = randomUUID()
          const key = randomUUID()
          const first = await postOrder(writer.url, key, intent, 5)
          expect(first.status).toBe(201)
          const retry = await postOrder(reader.url, key, intent, 5)
          expect(retry.status, `${mode}: retry on the other clock`).toBe(201)
          expect(retry.headers.get('idempotent-replayed'), `${mode}: replayed`).toBe('true')
          expect(await retry.text()).toBe(await first.text())
          duplicates += (await effects(intent)) - 1
          checks++
        }
        if (mode !== 'postgres') {
          // A lease taken by a clock 10 minutes behind, renewed by its heartbeat, is
          // still held for a clock 10 minutes ahead: no takeover, a 409.
          const intent = randomUUID()
          const key = randomUUID()
          // Held 6 s: the check below comes 1.2 s after the charge, with seconds to spare.
          const holding = postOrder(behind.url, key, intent, 5, 'chaos', 6_000)
          await eventually(
            async () => Number((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".charges WHERE intent = $1`, [intent])).rows[0].n) === 1,
            10_000,
            'the holder charged',
          )
          await sleep(1_200) // longer than the lease: only the heartbeat keeps it
          const during = await postOrder(ahead.url, key, intent, 5)
          expect(during.status, `${mode}: the ahead clock sees the lease held`).toBe(409)
          expect(during.headers.get('retry-after')).not.toBeNull()
          const held = await holding
          expect(held.status).toBe(201)
          const after = await postOrder(ahead.url, key, intent, 5)
          expect(after.headers.get('idempotent-replayed')).toBe('true')
          expect(await after.text()).toBe(await held.text())
          const calls = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".charge_calls c JOIN "${schema}".charges USING (idempotency_key) WHERE intent = $1`, [intent])
          duplicates += calls.rows[0].n - 1
          expect(calls.rows[0].n).toBe(1)
          checks++
        }
      } finally {
        await ahead.stop()
        await behind.stop()
      }
    }
    report(task, {
      scenario: 'clocks: app 10 min ahead of / behind the database (Postgres, Redis)',
      runs: checks,
      unit: 'checks',
      duplicates,
      lost: 0,
      unexpected5xx: 0,
      notes: '60 s retention and 1 s leases judged by the store\'s clock: every retry on the other clock replayed, no takeover of a held lease',
    })
    expect(duplicates).toBe(0)
  }, 180_000)
})
