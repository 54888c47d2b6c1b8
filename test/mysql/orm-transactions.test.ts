// A call joins the transaction an ORM opened on MySQL: the key, the app's own rows,
// outbox rows and once marks commit or roll back together, whichever query builder the
// app uses (Kysely's MysqlDialect, Drizzle's mysql2 driver).
import { randomUUID } from 'node:crypto'
import { sql as drizzleSql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/mysql2'
import { int, mysqlTable, varchar } from 'drizzle-orm/mysql-core'
import { Kysely, MysqlDialect } from 'kysely'
import { createPool } from 'mysql2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, InvalidOptionError, type Idem } from '../../src/index.js'
import { fromDrizzle, fromKysely, mysqlStore, type MysqlExecutor, type MysqlStore } from '../../src/stores/mysql/index.js'
import { testDatabase, type TestDatabase } from '../support/mysql.js'

const db = await testDatabase('idem_mysql_orm', 8)

interface Database {
  orders: { id: string; amount: number }
}
const orders = mysqlTable('orders', { id: varchar('id', { length: 100 }).primaryKey(), amount: int('amount').notNull() })

interface App {
  name: string
  transaction<T>(work: (app: { tx: MysqlExecutor; insertOrder(id: string, amount: number): Promise<void> }) => Promise<T>): Promise<T>
}

describe.skipIf(db === undefined)('mysql: calls joining an ORM transaction', () => {
  const { pool, url } = db as TestDatabase
  // The app's own pool, as each ORM takes it.
  const appPool = createPool({ uri: url, connectionLimit: 4 })
  let store: MysqlStore
  let idem: Idem<MysqlExecutor>
  beforeAll(async () => {
    store = mysqlStore({ pool })
    await store.migrate()
    await pool.query('CREATE TABLE orders (id VARCHAR(100) PRIMARY KEY, amount INT NOT NULL) ENGINE=InnoDB')
    idem = createIdem({ store, waitMs: 0 })
  })
  afterAll(async () => {
    await new Promise((resolve) => appPool.end(resolve))
    await db?.drop()
  })

  const kysely = new Kysely<Database>({ dialect: new MysqlDialect({ pool: appPool }) })
  const drizzleDb = drizzle(appPool)
  const apps: App[] = [
    {
      name: 'Kysely',
      transaction: (work) =>
        kysely.transaction().execute((trx) => work({ tx: fromKysely(trx), insertOrder: async (id, amount) => void (await trx.insertInto('orders').values({ id, amount }).execute()) })),
    },
    {
      name: 'Drizzle',
      transaction: (work) => drizzleDb.transaction((tx) => work({ tx: fromDrizzle(tx, drizzleSql), insertOrder: async (id, amount) => void (await tx.insert(orders).values({ id, amount })) })),
    },
  ]
  const countOrders = async (id: string): Promise<number> => Number(((await pool.query('SELECT COUNT(*) AS n FROM orders WHERE id = ?', [id]))[0] as { n: number }[])[0]!.n)

  for (const app of apps) {
    it(`${app.name}: the key, the order, an outbox row and a once mark commit together; a retry replays`, async () => {
      const key = `orm-${randomUUID()}`
      const call = () =>
        app.transaction(async ({ tx, insertOrder }) =>
          idem.run({ scope: 'acct', key, input: 1, tx }, async () => {
            await insertOrder(key, 10)
            expect(await store.outbox.add(tx, { topic: 'orders', dedupeKey: key, payload: '{"a":1}', delayMs: 0 })).toBe(true)
            expect(await store.once.mark(tx, 'email', key)).toBe(true)
            expect(await store.once.mark(tx, 'email', key)).toBe(false)
            return { order: key }
          }),
        )
      expect(await call()).toEqual({ value: { order: key }, replayed: false, stored: true })
      expect(await call()).toEqual({ value: { order: key }, replayed: true, stored: true })
      expect(await countOrders(key)).toBe(1)
    })

    it(`${app.name}: a rolled-back transaction forgets the key and the order; the retry runs`, async () => {
      const key = `orm-rb-${randomUUID()}`
      await expect(
        app.transaction(async ({ tx, insertOrder }) => {
          await idem.run({ scope: 'acct', key, input: 1, tx }, async () => void (await insertOrder(key, 1)))
          throw new Error('the app rolls back')
        }),
      ).rejects.toThrow('the app rolls back')
      expect(await countOrders(key)).toBe(0)
      const retried = await app.transaction(({ tx, insertOrder }) => idem.run({ scope: 'acct', key, input: 1, tx }, async () => (await insertOrder(key, 1), 'ran')))
      expect(retried).toEqual({ value: 'ran', replayed: false, stored: true })
      expect(await countOrders(key)).toBe(1)
    })
  }

  it('a pool, or an ORM transaction passed as it is, is refused by name', async () => {
    await expect(idem.run({ scope: 'acct', key: 'k', input: 1, tx: pool }, async () => 1)).rejects.toThrow(/a mysql2 pool .*pass await pool.getConnection\(\)/)
    await kysely.transaction().execute(async (trx) => {
      await expect(idem.run({ scope: 'acct', key: 'k', input: 1, tx: trx as never }, async () => 1)).rejects.toThrow(/pass fromKysely\(trx\)/)
    })
    expect(() => fromKysely({} as never)).toThrow(InvalidOptionError)
  })
})
