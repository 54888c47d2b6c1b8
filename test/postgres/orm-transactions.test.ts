// A call joins the transaction an ORM opened: the key, the app's own rows, outbox rows
// and once marks commit or roll back together, whichever query builder the app uses.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { sql as drizzleSql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import { integer, pgTable, text } from 'drizzle-orm/pg-core'
import { CamelCasePlugin, Kysely, ParseJSONResultsPlugin, PostgresDialect, sql as kyselySql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, InFlightError, MigrationRequiredError, type Idem } from '../../src/index.js'
import { createOnce } from '../../src/data/index.js'
import { createOutbox } from '../../src/queue/index.js'
import { fromDrizzle, fromKysely, postgresStore, type PgClient, type PostgresStore } from '../../src/stores/postgres/index.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('idem_orm')

interface Database {
  orders: { id: string; amount: number }
}
const orders = pgTable('orders', { id: text('id').primaryKey(), amount: integer('amount').notNull() })

/** One app transaction as each ORM opens it: idem's `tx`, and the app's own INSERT through the ORM. */
interface App {
  name: string
  transaction<T>(work: (app: { tx: PgClient; insertOrder(id: string, amount: number): Promise<void> }) => Promise<T>): Promise<T>
}

describe.skipIf(db === undefined)('calls joining an ORM transaction', () => {
  const { pool, schema } = db as TestSchema
  // The app's own pool, finding its tables on its search_path as an app would.
  const appPool = new pg.Pool({ connectionString: PG_URL, max: 4, connectionTimeoutMillis: 10_000, options: `-c search_path=${schema}` })
  appPool.on('error', () => {})
  let store: PostgresStore
  let idem: Idem<PgClient>
  beforeAll(async () => {
    store = postgresStore({ pool, schema })
    await store.migrate()
    await pool.query(`CREATE TABLE "${schema}".orders (id text PRIMARY KEY, amount integer NOT NULL)`)
    idem = createIdem({ store })
  })
  afterAll(async () => {
    // Both ORMs run on appPool (Kysely's destroy() would end it too).
    await appPool.end()
    await db?.drop()
  })

  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool: appPool }) })
  const drizzleDb = drizzle(appPool)
  const apps: App[] = [
    {
      name: 'Kysely',
      transaction: (work) =>
        kysely.transaction().execute((trx) =>
          work({
            tx: fromKysely(trx),
            insertOrder: async (id, amount) => void (await trx.insertInto('orders').values({ id, amount }).execute()),
          }),
        ),
    },
    {
      name: 'Drizzle',
      transaction: (work) =>
        drizzleDb.transaction((tx) =>
          work({
            tx: fromDrizzle(tx, drizzleSql),
            insertOrder: async (id, amount) => void (await tx.insert(orders).values({ id, amount })),
          }),
        ),
    },
  ]

  const orderRows = async (id: string): Promise<number> =>
    (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".orders WHERE id = $1`, [id])).rows[0].n
  const keyRows = async (key: string): Promise<number> =>
    (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys WHERE key = $1`, [key])).rows[0].n
  const outboxRows = async (dedupeKey: string): Promise<number> =>
    (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_outbox WHERE dedupe_key = $1`, [dedupeKey])).rows[0].n
  const backendPid = async (tx: PgClient): Promise<number> => ((await tx.query('SELECT pg_backend_pid() AS pid')).rows[0] as { pid: number }).pid
  // Polls until some backend waits on `pid`'s locks (no sleeps standing in for order),
  // or `gaveUp` says there is nothing left to wait for.
  const waitUntilBlocking = async (pid: number, gaveUp: () => boolean): Promise<void> => {
    while (!gaveUp()) {
      const { rows } = await pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))', [pid])
      if (rows[0].n > 0) return
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }

  describe.each(apps.map((app) => [app.name, app] as const))('%s', (_name, app) => {
    /** The app's endpoint: one order per key, in the app's transaction. */
    const placeOrder = (key: string, id: string, amount: number, runs: { n: number }, options: { waitMs?: number } = {}) =>
      app.transaction(({ tx, insertOrder }) =>
        idem.run({ scope: 'acct', key, input: { amount }, tx, ...options }, async () => {
          runs.n++
          await insertOrder(id, amount)
          return { orderId: id }
        }),
      )

    it('commits the key and the app row together; a retry replays without inserting', async () => {
      const key = randomUUID()
      const runs = { n: 0 }
      expect(await placeOrder(key, `o-${key}`, 5, runs)).toEqual({ value: { orderId: `o-${key}` }, replayed: false, stored: true })
      expect(await orderRows(`o-${key}`)).toBe(1)
      expect(await keyRows(key)).toBe(1)

      // The retry mints a new order id, as a handler would: it must never be inserted.
      expect(await placeOrder(key, `o-${key}-again`, 5, runs)).toEqual({ value: { orderId: `o-${key}` }, replayed: true, stored: true })
      expect(runs.n).toBe(1)
      expect(await orderRows(`o-${key}-again`)).toBe(0)
      // The key is a real record: a call outside any ORM replays it too.
      expect((await createIdem({ store: postgresStore({ pool, schema }) }).run({ scope: 'acct', key, input: { amount: 5 } }, () => 'never')).replayed).toBe(true)
    })

    it('rolls the key back with the app row when the app transaction throws after run; the retry runs again', async () => {
      const key = randomUUID()
      const runs = { n: 0 }
      const boom = new Error('the app failed after the call')
      await expect(
        app.transaction(async ({ tx, insertOrder }) => {
          const result = await idem.run({ scope: 'acct', key, input: 1, tx }, async () => {
            runs.n++
            await insertOrder(`o-${key}`, 1)
            return 'placed'
          })
          expect(result.replayed).toBe(false)
          throw boom
        }),
      ).rejects.toBe(boom)
      expect(await orderRows(`o-${key}`)).toBe(0)
      expect(await keyRows(key)).toBe(0)

      expect(await placeOrder(key, `o-${key}`, 1, runs)).toEqual({ value: { orderId: `o-${key}` }, replayed: false, stored: true })
      expect(runs.n).toBe(2)
      expect(await orderRows(`o-${key}`)).toBe(1)
      expect(await keyRows(key)).toBe(1)
    })

    it('runs the function once for two concurrent transactions with one key: the second waits, then replays', async () => {
      const key = randomUUID()
      const runs = { n: 0 }
      let release!: () => void
      const gate = new Promise<void>((resolve) => (release = resolve))
      let holding!: (pid: number) => void
      const held = new Promise<number>((resolve) => (holding = resolve))
      const first = app.transaction(({ tx, insertOrder }) =>
        idem.run({ scope: 'acct', key, input: { amount: 7 }, tx }, async () => {
          runs.n++
          await insertOrder(`o-${key}`, 7)
          holding(await backendPid(tx))
          await gate
          return { orderId: `o-${key}` }
        }),
      )
      const pid = await held
      let settled = false
      const second = placeOrder(key, `o-${key}-second`, 7, runs).finally(() => (settled = true))
      // Should the second not wait, the assertions below say what it did instead.
      await waitUntilBlocking(pid, () => settled)
      release()
      expect(await first).toEqual({ value: { orderId: `o-${key}` }, replayed: false, stored: true })
      expect(await second).toEqual({ value: { orderId: `o-${key}` }, replayed: true, stored: true })
      expect(runs.n).toBe(1)
      expect(await orderRows(`o-${key}`)).toBe(1)
      expect(await orderRows(`o-${key}-second`)).toBe(0)
    })

    it('answers a concurrent duplicate with waitMs 0 by InFlightError, without running it', async () => {
      const key = randomUUID()
      const runs = { n: 0 }
      let release!: () => void
      const gate = new Promise<void>((resolve) => (release = resolve))
      let holding!: () => void
      const held = new Promise<void>((resolve) => (holding = resolve))
      const first = app.transaction(({ tx, insertOrder }) =>
        idem.run({ scope: 'acct', key, input: { amount: 8 }, tx }, async () => {
          runs.n++
          await insertOrder(`o-${key}`, 8)
          holding()
          await gate
          return 'first'
        }),
      )
      await held
      const error = await placeOrder(key, `o-${key}-second`, 8, runs, { waitMs: 0 }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(InFlightError)
      release()
      expect((await first).value).toBe('first')
      expect(runs.n).toBe(1)
      expect(await orderRows(`o-${key}`)).toBe(1)
    })

    it('outbox.add writes through the app transaction: committed with it, gone when it rolls back', async () => {
      const outbox = createOutbox({ store })
      const committed = randomUUID()
      await app.transaction(async ({ tx, insertOrder }) => {
        await insertOrder(`o-${committed}`, 1)
        expect(await outbox.add(tx, { topic: 'email', payload: { order: committed }, dedupeKey: committed })).toBe(true)
      })
      expect(await outboxRows(committed)).toBe(1)
      // Already queued: a second add in a later transaction is ignored.
      expect(await app.transaction(({ tx }) => outbox.add(tx, { topic: 'email', payload: {}, dedupeKey: committed }))).toBe(false)

      const rolledBack = randomUUID()
      const boom = new Error('rolled back')
      await expect(
        app.transaction(async ({ tx, insertOrder }) => {
          await insertOrder(`o-${rolledBack}`, 1)
          await outbox.add(tx, { topic: 'email', payload: { order: rolledBack }, dedupeKey: rolledBack })
          throw boom
        }),
      ).rejects.toBe(boom)
      expect(await outboxRows(rolledBack)).toBe(0)
      expect(await orderRows(`o-${rolledBack}`)).toBe(0)
    })

    it('once marks in the app transaction: forgotten when it rolls back, kept when it commits', async () => {
      const once = createOnce({ store })
      const subject = randomUUID()
      const boom = new Error('rolled back')
      await expect(
        app.transaction(async ({ tx }) => {
          expect(await once(tx, 'welcome-email', subject)).toBe(true)
          throw boom
        }),
      ).rejects.toBe(boom)
      expect(await app.transaction(({ tx }) => once(tx, 'welcome-email', subject))).toBe(true)
      expect(await app.transaction(({ tx }) => once(tx, 'welcome-email', subject))).toBe(false)
    })

    it("reports idem's tables missing as MigrationRequiredError through the ORM's driver", async () => {
      const unmigrated = createIdem({ store: postgresStore({ pool, schema: `${schema}_missing` }) })
      await expect(app.transaction(({ tx }) => unmigrated.run({ scope: 'acct', key: randomUUID(), input: 1, tx }, () => 'never'))).rejects.toThrow(
        MigrationRequiredError,
      )
    })
  })

  it("leaves the app's Kysely plugins out of idem's statements: a stored JSON outcome replays as stored", async () => {
    // ParseJSONResultsPlugin would turn the stored outcome's text into an object.
    const plugged = new Kysely<Database>({ dialect: new PostgresDialect({ pool: appPool }), plugins: [new ParseJSONResultsPlugin(), new CamelCasePlugin()] })
    const key = randomUUID()
    const call = () =>
      plugged.transaction().execute((trx) => idem.run({ scope: 'acct', key, input: 1, tx: fromKysely(trx) }, () => ({ nested: { list: [1, 2] } })))
    expect(await call()).toEqual({ value: { nested: { list: [1, 2] } }, replayed: false, stored: true })
    expect(await call()).toEqual({ value: { nested: { list: [1, 2] } }, replayed: true, stored: true })
    // The app's own queries keep their plugins.
    const { rows } = await plugged.transaction().execute((trx) => kyselySql<{ parsed: unknown }>`SELECT '{"a":1}'::text AS parsed`.execute(trx))
    expect(rows[0]!.parsed).toEqual({ a: 1 })
  })
})
