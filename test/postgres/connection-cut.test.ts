import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, createLeasedIdem, StoreUnavailableError } from '../../src/index.js'
import { createDispatcher, createInbox, createOutbox } from '../../src/queue/index.js'
import { leasedPostgresStore, postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { startTcpFaultProxy, type TcpFaultProxy } from '../../src/testing/index.js'
import { connectionsGone, failOnUncaughtErrors, pgTarget, storePool, until, waitingOnLock } from '../support/connection-loss.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { unique } from '../queue/support.js'

// The network path to Postgres cut in the middle of a call (a failover, a partition),
// with a TCP fault proxy between the pool and the server: nobody says goodbye, the
// sockets just die. The process survives, the call fails with StoreUnavailableError,
// its retry succeeds, and nothing is applied twice.

const db = await testSchema('idem_pg_conncut')

describe.skipIf(db === undefined)('postgres: the TCP connection is cut mid-call', () => {
  const { pool: admin, schema } = db as TestSchema
  failOnUncaughtErrors()
  const effects = `"${schema}".effects`
  let proxy: TcpFaultProxy
  const pools: Array<pg.Pool & { errors: Error[] }> = []
  // A pool through the proxy. The cut kills its idle clients too, which pg-pool reports on
  // the pool's own 'error' (recorded by storePool): that listener is the application's.
  // The server checks for a vanished client every 50 ms while a statement runs, so a
  // statement cut mid-way is abandoned rather than finished for nobody.
  const cutPool = (name = unique('idem-cut'), { checkClient = true } = {}) => {
    const pool = storePool(name, { via: proxy, ...(checkClient ? { checkClientMs: 50 } : {}) })
    pools.push(pool)
    return Object.assign(pool, { name })
  }

  beforeAll(async () => {
    proxy = await startTcpFaultProxy({ target: pgTarget() })
    await postgresStore({ pool: admin, schema }).migrate()
    await admin.query(`CREATE TABLE ${effects} (id text NOT NULL)`)
  })
  afterAll(async () => {
    for (const pool of pools) await pool.end()
    await proxy?.close()
    await db?.drop()
  })

  const count = async (id: string) => (await admin.query(`SELECT count(*)::int AS n FROM ${effects} WHERE id = $1`, [id])).rows[0].n as number
  const insert = (tx: PgClient, id: string) => tx.query(`INSERT INTO ${effects} (id) VALUES ($1)`, [id])

  /**
   * Holds `lock` (a LOCK TABLE or advisory lock statement) in a transaction of the admin
   * pool until the returned function is called: a statement of idem's then waits, so a
   * cut lands while it runs. The tests wait for the server to drop the cut connection
   * before letting go, or it could run the statement anyway, for nobody (see the
   * dispatcher's last test for what that costs).
   */
  async function holding(lock: string, values: unknown[] = []): Promise<() => Promise<void>> {
    const client = await admin.connect()
    await client.query('BEGIN')
    await client.query(lock, values)
    return async () => {
      await client.query('COMMIT')
      client.release()
    }
  }

  // Each cuts the connection under a handler that has written a row through `tx`.
  const cuts: Record<string, (tx: PgClient, poolName: string) => Promise<void>> = {
    'between statements': async () => {
      proxy.cut()
    },
    'between statements, with a reset (ECONNRESET)': async () => {
      proxy.cut({ reset: true })
    },
    'during a statement': async (tx, poolName) => {
      const sleeping = tx.query('SELECT pg_sleep(30)')
      const failed = sleeping.then(() => undefined, (error: unknown) => error)
      await until('the sleep to run', async () => {
        const { rowCount } = await admin.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'SELECT pg_sleep%' AND state = 'active'`, [poolName])
        return (rowCount ?? 0) > 0
      })
      proxy.cut()
      throw await failed
    },
  }

  it.each(Object.keys(cuts))('engine, cut %s: StoreUnavailableError, nothing committed, the retry runs once, the next call works', async (how) => {
    const pool = cutPool()
    const idem = createIdem({ store: postgresStore({ pool, schema }), waitMs: 10_000 })
    const key = unique('k')
    let runs = 0
    const call = (id: string, cut: boolean) =>
      idem.run({ scope: 'cut', key: id, input: { id } }, async (tx) => {
        runs++
        await insert(tx, id)
        if (cut) {
          await cuts[how]!(tx, pool.name)
          await insert(tx, id)
        }
        return { ok: id }
      })
    await expect(call(key, true)).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(await count(key)).toBe(0)
    expect(await call(key, false)).toEqual({ value: { ok: key }, replayed: false, stored: true })
    expect(await call(key, false)).toEqual({ value: { ok: key }, replayed: true, stored: true })
    expect(runs).toBe(2)
    expect(await count(key)).toBe(1)
    const next = unique('next')
    expect(await call(next, false)).toMatchObject({ replayed: false, stored: true })
    expect(await count(next)).toBe(1)
  })

  it('engine: a handler that returns without touching the cut connection fails at commit with StoreUnavailableError', async () => {
    const pool = cutPool()
    const idem = createIdem({ store: postgresStore({ pool, schema }), waitMs: 10_000 })
    const key = unique('k')
    const call = (cut: boolean) =>
      idem.run({ scope: 'cut', key, input: 1 }, async (tx) => {
        await insert(tx, key)
        if (cut) proxy.cut()
        return 'ok'
      })
    await expect(call(true)).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(await call(false)).toMatchObject({ replayed: false })
    expect(await count(key)).toBe(1)
  })

  it('inbox, cut between statements: consume rejects with StoreUnavailableError; the redelivery is processed once', async () => {
    const pool = cutPool()
    const inbox = createInbox<PgClient>({ store: postgresStore({ pool, schema }), consumer: unique('c'), waitMs: 10_000 })
    const id = unique('m')
    const handler = (cut: boolean) => async (tx: PgClient) => {
      await insert(tx, id)
      if (cut) {
        proxy.cut({ reset: true })
        await insert(tx, id)
      }
    }
    await expect(inbox.consume({ id, body: {}, deliveryCount: 1 }, handler(true))).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(await count(id)).toBe(0)
    expect(await inbox.consume({ id, body: {}, deliveryCount: 2 }, handler(false))).toMatchObject({ status: 'processed' })
    expect(await inbox.consume({ id, body: {}, deliveryCount: 3 }, handler(false))).toEqual({ status: 'duplicate', key: id })
    expect(await count(id)).toBe(1)
  })

  describe('outbox dispatcher', () => {
    const outbox = createOutbox({ store: postgresStore({ pool: admin, schema }) })
    async function queue(dedupeKey: string): Promise<void> {
      const client = await admin.connect()
      try {
        await client.query('BEGIN')
        await outbox.add(client, { topic: 'cut', payload: { dedupeKey }, dedupeKey })
        await client.query('COMMIT')
      } finally {
        client.release()
      }
    }
    // The receiving side drops duplicates by the dedupe key, as the outbox asks of it.
    const received = async (dedupeKey: string) => count(`received:${dedupeKey}`)
    const receive = async (dedupeKey: string) => {
      await admin.query(`INSERT INTO ${effects} (id) SELECT $1 WHERE NOT EXISTS (SELECT 1 FROM ${effects} WHERE id = $1)`, [`received:${dedupeKey}`])
    }

    it('cut while deliver runs: the round still records the delivery, and the row is delivered once', async () => {
      const pool = cutPool()
      const dedupeKey = unique('d')
      await queue(dedupeKey)
      let deliveries = 0
      const dispatcher = createDispatcher({
        store: postgresStore({ pool, schema }),
        topics: ['cut'],
        deliver: async (row) => {
          deliveries++
          await receive(row.dedupeKey)
          if (deliveries === 1) {
            proxy.cut()
            // The claim's client sat idle in the pool: wait until the pool has dropped it.
            await until('the pool to drop its cut client', () => pool.totalCount === 0)
          }
        },
      })
      expect(await dispatcher.runOnce()).toMatchObject({ claimed: 1, delivered: 1 })
      expect(await dispatcher.runOnce()).toMatchObject({ claimed: 0 })
      expect(deliveries).toBe(1)
      expect(await received(dedupeKey)).toBe(1)
      expect(pool.errors.length).toBeGreaterThan(0)
      const next = unique('d')
      await queue(next)
      expect(await dispatcher.runOnce()).toMatchObject({ claimed: 1, delivered: 1 })
      expect(await received(next)).toBe(1)
    })

    it('cut while the claim statement runs: runOnce rejects with StoreUnavailableError, the next round delivers the row once', async () => {
      const pool = cutPool()
      const dedupeKey = unique('d')
      await queue(dedupeKey)
      let deliveries = 0
      const dispatcher = createDispatcher({
        store: postgresStore({ pool, schema }),
        topics: ['cut'],
        deliver: async (row) => {
          deliveries++
          await receive(row.dedupeKey)
        },
      })
      const unlock = await holding(`LOCK TABLE "${schema}".idem_outbox IN ACCESS EXCLUSIVE MODE`)
      const round = dispatcher.runOnce()
      const failed = round.then(() => undefined, (error: unknown) => error)
      try {
        await waitingOnLock(admin, pool.name)
        proxy.cut()
        expect(await failed).toBeInstanceOf(StoreUnavailableError)
        await connectionsGone(admin, pool.name)
      } finally {
        await unlock()
      }
      expect(await dispatcher.runOnce()).toMatchObject({ claimed: 1, delivered: 1 })
      expect(deliveries).toBe(1)
      expect(await received(dedupeKey)).toBe(1)
    })

    it('a claim the server finishes for nobody (the cut went unnoticed until the lock freed) leases its row until leaseMs; then it is delivered once', async () => {
      // Without the client check the server learns of the cut only when it answers.
      const pool = cutPool(unique('idem-cut'), { checkClient: false })
      const dedupeKey = unique('d')
      await queue(dedupeKey)
      let deliveries = 0
      const dispatcher = createDispatcher({
        store: postgresStore({ pool, schema }),
        topics: ['cut'],
        leaseMs: 300,
        deliver: async (row) => {
          deliveries++
          await receive(row.dedupeKey)
        },
      })
      const unlock = await holding(`LOCK TABLE "${schema}".idem_outbox IN ACCESS EXCLUSIVE MODE`)
      const failed = dispatcher.runOnce().then(() => undefined, (error: unknown) => error)
      try {
        await waitingOnLock(admin, pool.name)
        proxy.cut()
        expect(await failed).toBeInstanceOf(StoreUnavailableError)
      } finally {
        await unlock()
      }
      await until('the claim to finish for nobody', async () => {
        const { rows } = await admin.query(`SELECT attempts FROM "${schema}".idem_outbox WHERE dedupe_key = $1`, [dedupeKey])
        return (rows[0] as { attempts: number }).attempts === 1
      })
      await until('the row to be delivered', async () => (await dispatcher.runOnce()).delivered === 1)
      expect(await dispatcher.runOnce()).toMatchObject({ claimed: 0 })
      expect(deliveries).toBe(1)
      expect(await received(dedupeKey)).toBe(1)
    })
  })

  describe('leased store (one statement per call, on a client of its own)', () => {
    it('cut while the claim runs: StoreUnavailableError, then the retry claims, runs once and completes', async () => {
      const pool = cutPool()
      const store = leasedPostgresStore({ pool, schema })
      const idem = createLeasedIdem({ store })
      const key = unique('k')
      let runs = 0
      const call = () =>
        idem.run({ scope: 'cut', key, input: 1 }, async () => {
          runs++
          await admin.query(`INSERT INTO ${effects} (id) VALUES ($1)`, [key])
          return 'done'
        })
      const unlock = await holding(`LOCK TABLE "${schema}".idem_leases IN ACCESS EXCLUSIVE MODE`)
      const failed = call().then(() => undefined, (error: unknown) => error)
      try {
        await waitingOnLock(admin, pool.name)
        proxy.cut()
        expect(await failed).toBeInstanceOf(StoreUnavailableError)
        await connectionsGone(admin, pool.name)
      } finally {
        await unlock()
      }
      expect(await call()).toEqual({ value: 'done', replayed: false, stored: true })
      expect(await call()).toEqual({ value: 'done', replayed: true, stored: true })
      expect(runs).toBe(1)
      expect(await count(key)).toBe(1)
    })

    it('cut while prune runs: StoreUnavailableError, and the next prune works', async () => {
      const pool = cutPool()
      const store = leasedPostgresStore({ pool, schema })
      const unlock = await holding(`LOCK TABLE "${schema}".idem_leases IN ACCESS EXCLUSIVE MODE`)
      const failed = store.prune().then(() => undefined, (error: unknown) => error)
      try {
        await waitingOnLock(admin, pool.name)
        proxy.cut()
        expect(await failed).toBeInstanceOf(StoreUnavailableError)
        await connectionsGone(admin, pool.name)
      } finally {
        await unlock()
      }
      await expect(store.prune()).resolves.toBeTypeOf('number')
    })
  })

  it('transactional store: cut while prune runs, and while migrate holds its transaction: StoreUnavailableError, then both work', async () => {
    const pool = cutPool()
    const store = postgresStore({ pool, schema })
    let unlock = await holding(`LOCK TABLE "${schema}".idem_keys IN ACCESS EXCLUSIVE MODE`)
    const pruned = store.prune().then(() => undefined, (error: unknown) => error)
    try {
      await waitingOnLock(admin, pool.name)
      proxy.cut()
      expect(await pruned).toBeInstanceOf(StoreUnavailableError)
      await connectionsGone(admin, pool.name)
    } finally {
      await unlock()
    }
    await expect(store.prune()).resolves.toBeTypeOf('number')

    // migrate takes an advisory lock inside its transaction first: hold it, so the cut lands mid-transaction.
    unlock = await holding('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`idem:migrate:${schema}`])
    const migrated = store.migrate().then(() => undefined, (error: unknown) => error)
    try {
      await waitingOnLock(admin, pool.name)
      proxy.cut({ reset: true })
      expect(await migrated).toBeInstanceOf(StoreUnavailableError)
      await connectionsGone(admin, pool.name)
    } finally {
      await unlock()
    }
    await expect(store.migrate()).resolves.toMatchObject({ applied: [] })
  })
})
