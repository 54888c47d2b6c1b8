import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createIdem, InvalidOptionError } from '../../src/index.js'
import { backoffDelay, createDispatcher, createOutbox, listDeadLetters, type OutboxRow } from '../../src/queue/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import * as postgresSql from '../../src/stores/postgres/dialect/index.js'
import { sqliteStore } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { unique } from './support.js'

const db = await testSchema('idem_q_outbox', 12)
afterAll(() => db?.drop())

describe.skipIf(db === undefined)('outbox and dispatcher on Postgres', () => {
  const { pool, schema } = db as TestSchema
  const store = postgresStore({ pool, schema })
  const outbox = createOutbox({ store })
  beforeAll(() => store.migrate())
  beforeEach(() => pool.query(`TRUNCATE "${schema}".idem_outbox, "${schema}".idem_dead_letters`))

  async function fill(n: number, topic = 'email'): Promise<void> {
    // Rows queued in batches of caller transactions, as many requests would.
    for (let start = 0; start < n; start += 500) {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        for (let i = start; i < Math.min(n, start + 500); i++) await outbox.add(client, { topic, payload: { n: i }, dedupeKey: `effect-${i}` })
        await client.query('COMMIT')
      } finally {
        client.release()
      }
    }
  }

  it('add joins the caller transaction: rolled back with it, committed with it, and deduplicated by (topic, dedupeKey)', async () => {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      expect(await outbox.add(client, { topic: 'email', payload: { to: 'a' }, dedupeKey: 'welcome:a' })).toBe(true)
      await client.query('ROLLBACK')
      await client.query('BEGIN')
      expect(await outbox.add(client, { topic: 'email', payload: { to: 'a' }, dedupeKey: 'welcome:a' })).toBe(true)
      expect(await outbox.add(client, { topic: 'email', payload: { to: 'a' }, dedupeKey: 'welcome:a' })).toBe(false)
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    const { rows } = await pool.query(`SELECT topic, dedupe_key, payload FROM "${schema}".idem_outbox`)
    expect(rows).toEqual([{ topic: 'email', dedupe_key: 'welcome:a', payload: { to: 'a' } }])
  })

  it('inside an engine call, the row commits with the key and the effect', async () => {
    const idem = createIdem({ store: postgresStore({ pool, schema }) })
    const key = unique('k')
    for (let i = 0; i < 2; i++) {
      await idem.run({ scope: 'acct', key, input: 1 }, (tx) => outbox.add(tx, { topic: 'email', payload: { key }, dedupeKey: key }))
    }
    expect((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_outbox`)).rows[0].n).toBe(1)
  })

  it('two dispatchers racing over 5,000 rows deliver each exactly once', async () => {
    await fill(5_000)
    const deliveries = new Map<string, number>()
    const byDispatcher = [0, 0]
    const make = (index: number) =>
      createDispatcher({
        store,
        batchSize: 100,
        deliver: async (row) => {
          deliveries.set(row.dedupeKey, (deliveries.get(row.dedupeKey) ?? 0) + 1)
          byDispatcher[index]!++
          if (row.attempt !== 1) throw new Error('no row should need a second attempt')
        },
      })
    const [a, b] = [make(0), make(1)]
    await Promise.all([a.drain(), b.drain()])
    expect(deliveries.size).toBe(5_000)
    expect([...deliveries.values()].every((n) => n === 1)).toBe(true)
    expect(byDispatcher[0]! + byDispatcher[1]!).toBe(5_000)
    expect(byDispatcher[0]).toBeGreaterThan(0)
    expect(byDispatcher[1]).toBeGreaterThan(0)
    expect(await a.pending()).toBe(0)
  })

  it('with a deliverer failing 30% of the time, every row is eventually delivered and the dedupe key makes repeats harmless', async () => {
    await fill(5_000)
    // The receiving side: keeps what it accepted by dedupe key, as an email provider would.
    const accepted = new Map<string, unknown>()
    let calls = 0
    let failures = 0
    const deliver = async (row: OutboxRow) => {
      calls++
      // Fails before or after accepting: after is the "sent, but the response was lost" case.
      const roll = Math.random()
      if (roll < 0.15) {
        failures++
        throw new Error('provider timed out')
      }
      accepted.set(row.dedupeKey, row.payload)
      if (roll < 0.3) {
        failures++
        throw new Error('connection reset after send')
      }
    }
    const options = { store, batchSize: 200, maxAttempts: 25, backoff: { baseMs: 1, maxMs: 20 }, deliver }
    const [a, b] = [createDispatcher(options), createDispatcher(options)]
    const deadline = Date.now() + 30_000
    while ((await a.pending()) > 0) {
      if (Date.now() > deadline) throw new Error('rows still pending after 30 s')
      await Promise.all([a.drain(), b.drain()])
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    expect(accepted.size).toBe(5_000)
    expect(calls).toBeGreaterThan(5_000)
    expect(failures).toBeGreaterThan(1_000)
    expect(await listDeadLetters(store, { source: 'outbox' })).toEqual([])
    const { rows } = await pool.query(`SELECT count(*)::int AS n, max(attempts) AS most FROM "${schema}".idem_outbox WHERE delivered_at IS NOT NULL`)
    expect(rows[0].n).toBe(5_000)
    expect(rows[0].most).toBeGreaterThan(1)
  })

  it('after maxAttempts a row moves to idem_dead_letters with its last error, and the others are delivered', async () => {
    await fill(3)
    const client = await pool.connect()
    await client.query('BEGIN')
    await outbox.add(client, { topic: 'webhook', payload: { url: 'https://partner.invalid/hook' }, dedupeKey: 'hook-1' })
    await client.query('COMMIT')
    client.release()
    const delivered: string[] = []
    const dispatcher = createDispatcher({
      store,
      maxAttempts: 3,
      backoff: () => 0,
      deliver: async (row) => {
        if (row.topic === 'webhook') throw new Error(`partner answered 410 (attempt ${row.attempt})`)
        delivered.push(row.dedupeKey)
      },
    })
    const totals = { deadLettered: 0, retried: 0 }
    for (let round = 0; round < 5; round++) {
      const result = await dispatcher.drain()
      totals.deadLettered += result.deadLettered
      totals.retried += result.retried
    }
    expect(delivered.sort()).toEqual(['effect-0', 'effect-1', 'effect-2'])
    expect(totals).toEqual({ deadLettered: 1, retried: 2 })
    const letters = await listDeadLetters(store, { source: 'outbox', name: 'webhook' })
    expect(letters).toMatchObject([{ messageKey: 'hook-1', attempts: 3, lastError: 'Error: partner answered 410 (attempt 3)', payload: { url: 'https://partner.invalid/hook' } }])
    expect(await dispatcher.pending()).toBe(0)
  })

  it('a claim leases its rows: no other dispatcher takes them until the lease runs out, then the next claim does (a crashed dispatcher)', async () => {
    await fill(1)
    const claim = postgresSql.outboxClaim(schema, 10, 'dead-dispatcher', 60_000, null)
    expect((await pool.query(claim.text, claim.values)).rows).toHaveLength(1)
    const seen: OutboxRow[] = []
    const dispatcher = createDispatcher({ store, deliver: async (row) => void seen.push(row) })
    expect((await dispatcher.runOnce()).claimed).toBe(0)
    // The lease runs out (moved to the past rather than waited out, so no pause of the
    // machine can end it before the claim above).
    await pool.query(`UPDATE "${schema}".idem_outbox SET locked_until = now() - interval '1 millisecond', next_attempt_at = now() - interval '1 millisecond'`)
    expect((await dispatcher.runOnce()).delivered).toBe(1)
    expect(seen.map((r) => r.attempt)).toEqual([2])
    // The dead dispatcher's late outcome changes nothing: its claim no longer holds the row.
    const late = postgresSql.outboxRetry(schema, [seen[0]!.id], [0], ['late'], 'dead-dispatcher')
    expect((await pool.query(late.text, late.values)).rowCount).toBe(0)
  })

  it('start() dispatches in the background until stop()', async () => {
    await fill(120)
    const seen = new Set<string>()
    const dispatcher = createDispatcher({ store, batchSize: 50, pollMs: 10, deliver: async (row) => void seen.add(row.dedupeKey) })
    dispatcher.start()
    const deadline = Date.now() + 10_000
    while (seen.size < 120 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    await dispatcher.stop()
    expect(seen.size).toBe(120)
  })

  it('prune removes delivered rows older than deliveredOutboxOlderThanMs, and keeps undelivered and recent ones', async () => {
    const keep = `prune-keep-${Date.now()}`
    const client = await pool.connect()
    await client.query('BEGIN')
    for (const dedupeKey of [`${keep}-old`, `${keep}-pending`]) await outbox.add(client, { topic: 'prune', payload: {}, dedupeKey })
    await client.query('COMMIT')
    client.release()
    const dispatcher = createDispatcher({ store, topics: ['prune'], batchSize: 1, deliver: async () => {} })
    expect((await dispatcher.runOnce()).delivered).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 30))
    await store.prune()
    const rows = async () => (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_outbox WHERE topic = 'prune'`)).rows[0].n
    expect(await rows()).toBe(2)
    expect(await store.prune({ deliveredOutboxOlderThanMs: 10 })).toBeGreaterThanOrEqual(1)
    expect(await rows()).toBe(1)
    expect(await store.prune({ deliveredOutboxOlderThanMs: 10 })).toBe(0)
    await dispatcher.drain()
  })

  it('validates its options at creation, naming the option', () => {
    const deliver = async () => {}
    const bad: [() => unknown, RegExp][] = [
      [() => createDispatcher({ deliver } as never), /option "store" is required/],
      [() => createDispatcher({ store: pool, deliver } as never), /has no outbox table/],
      [() => createDispatcher({ store, deliver: 'x' } as never), /"deliver"/],
      [() => createDispatcher({ store, deliver, batchSize: 0 }), /"batchSize"/],
      [() => createDispatcher({ store, deliver, maxAttempts: 0 }), /"maxAttempts"/],
      [() => createDispatcher({ store, deliver, backoff: { baseMs: 10, maxMs: 5 } }), /"backoff.maxMs"/],
      [() => createDispatcher({ store: postgresStore({ pool, schema: 'a;b' }), deliver }), /"schema"/],
    ]
    for (const [make, message] of bad) expect(make).toThrow(message)
    expect(() => outbox.add(pool, { topic: '', payload: 1, dedupeKey: 'k' })).toThrow(InvalidOptionError)
    expect(() => outbox.add(pool, { topic: 't', payload: undefined, dedupeKey: 'k' })).toThrow(/"payload"/)
  })
})

describe('backoff', () => {
  it('is exponential with full jitter: attempt n waits in [0, min(max, base·2ⁿ⁻¹))', () => {
    const top = backoffDelay({ baseMs: 100, maxMs: 1_000 }, 'test', { random: () => 0.999999 })
    expect([1, 2, 3, 4, 5, 10].map(top)).toEqual([99, 199, 399, 799, 999, 999])
    const bottom = backoffDelay({ baseMs: 100, maxMs: 1_000 }, 'test', { random: () => 0 })
    expect(bottom(7)).toBe(0)
  })
})

describe('outbox and dispatcher on SQLite (a real file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-outbox-'))
  const sqlite = new Database(join(dir, 'outbox.db'))
  sqlite.pragma('journal_mode = WAL')
  const store = sqliteStore({ db: sqlite })
  store.migrate()
  afterAll(() => {
    sqlite.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('queues inside the engine transaction and dispatches with retries and dead letters', async () => {
    const idem = createIdem({ store })
    const outbox = createOutbox({ store })
    for (const key of ['a', 'b', 'a']) {
      await idem.run({ scope: 's', key, input: key }, (tx) => outbox.add(tx, { topic: key === 'b' ? 'broken' : 'email', payload: { key }, dedupeKey: key }))
    }
    expect(() => outbox.add(sqlite, { topic: 't', payload: 1, dedupeKey: 'outside' })).toThrow(/no open transaction/)
    const delivered: string[] = []
    const dispatcher = createDispatcher({
      store,
      maxAttempts: 2,
      backoff: () => 0,
      deliver: async (row) => {
        if (row.topic === 'broken') throw new Error('no route')
        delivered.push(row.dedupeKey)
      },
    })
    // An engine call holding the connection's transaction while the dispatcher runs: it waits, never joins.
    const held = idem.run({ scope: 's', key: 'c', input: 'c' }, async (tx) => {
      outbox.add(tx, { topic: 'email', payload: { key: 'c' }, dedupeKey: 'c' })
      await new Promise((resolve) => setTimeout(resolve, 30))
    })
    await Promise.all([held, dispatcher.drain()])
    await dispatcher.drain()
    await dispatcher.drain()
    expect(delivered.sort()).toEqual(['a', 'c'])
    expect(await dispatcher.pending()).toBe(0)
    expect(await listDeadLetters(store, { source: 'outbox' })).toMatchObject([{ messageKey: 'b', attempts: 2, lastError: 'Error: no route' }])
  })
  it('prune removes delivered rows older than deliveredOutboxOlderThanMs, and keeps undelivered ones', async () => {
    const outbox = createOutbox({ store })
    sqlite.transaction(() => {
      outbox.add(sqlite, { topic: 'prune', payload: {}, dedupeKey: 'prune-1' })
      outbox.add(sqlite, { topic: 'prune', payload: {}, dedupeKey: 'prune-2' })
    })()
    const dispatcher = createDispatcher({ store, batchSize: 1, deliver: async () => {} })
    expect((await dispatcher.runOnce()).delivered).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 30))
    const rows = () => (sqlite.prepare("SELECT count(*) AS n FROM idem_outbox WHERE topic = 'prune'").get() as { n: number }).n
    await store.prune()
    expect(rows()).toBe(2)
    await store.prune({ deliveredOutboxOlderThanMs: 10 })
    expect(rows()).toBe(1)
    await dispatcher.drain()
  })

  it('pending() never counts a row whose transaction is still open (it may roll back)', async () => {
    const idem = createIdem({ store })
    const outbox = createOutbox({ store })
    const dispatcher = createDispatcher({ store, deliver: async () => {} })
    const topic = unique('pending')
    const before = await dispatcher.pending()
    let letGo!: () => void
    const inside = new Promise<void>((resolve) => {
      const call = idem.run({ scope: 'pending', key: topic, input: 1 }, async (tx) => {
        outbox.add(tx, { topic, payload: 1, dedupeKey: topic })
        resolve()
        await new Promise<void>((release) => (letGo = release))
        throw new Error('roll back')
      })
      void call.catch(() => {})
    })
    await inside
    const counted = dispatcher.pending()
    setTimeout(() => letGo(), 20)
    expect(await counted).toBe(before)
  })

  it('gets its turn on a connection kept busy by engine calls (it queues with them instead of waiting for a gap)', async () => {
    const idem = createIdem({ store })
    const outbox = createOutbox({ store })
    const topic = unique('busy')
    for (let i = 0; i < 20; i++) await idem.run({ scope: 'busy', key: `${topic}-${i}`, input: i }, (tx) => outbox.add(tx, { topic, payload: i, dedupeKey: `${topic}-${i}` }))
    // Eight callers whose functions await: the connection is inside a transaction nearly
    // all the time, and one call hands it straight to the next.
    let stop = false
    let calls = 0
    const callers = Array.from({ length: 8 }, async (_, caller) => {
      for (let i = 0; !stop; i++) {
        await idem.run({ scope: 'busy', key: `load-${topic}-${caller}-${i}`, input: i }, async () => {
          await new Promise((resolve) => setTimeout(resolve, 1))
        })
        calls++
      }
    })
    try {
      await new Promise((resolve) => setTimeout(resolve, 50))
      const delivered: string[] = []
      const dispatcher = createDispatcher({ store, deliver: async (row) => void delivered.push(row.dedupeKey) })
      const before = calls
      const round = await dispatcher.runOnce()
      expect(round).toMatchObject({ claimed: 20, delivered: 20 })
      expect(delivered).toHaveLength(20)
      expect(calls).toBeGreaterThan(before) // the engine kept going meanwhile
    } finally {
      stop = true
      await Promise.all(callers)
    }
  })
})
