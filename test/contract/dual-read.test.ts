// The dual-read windows keep the port contract of the store they front: the key store
// suite through dualReadKeyStore over two Postgres key tables (idem_keys_by_day in
// front of idem_keys), the leased suite through dualReadStore over two Redis prefixes;
// each plain, with both stores encrypted inside the window, and with the window
// encrypted, so a port method that bypasses either wrapper fails a case. One backend
// per window: the wrappers are the same code over every store, and each store's own
// suite (encrypted too, in encrypted.test.ts) runs elsewhere.
// Keys recorded in previous and read through a window: test/scaling/dual-read.test.ts.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe } from 'vitest'
import { dualReadKeyStore, dualReadStore } from '../../src/core/dual-read.js'
import { type KeyPeek } from '../../src/ports/key-peek.js'
import type { LeasedStore } from '../../src/ports/leased-store.js'
import type { KeyStore } from '../../src/ports/key-store.js'
import { encryptedStore } from '../../src/stores/encrypted.js'
import { postgresStore, type PgClient } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { keyStoreContract, leasedStoreContract } from '../../src/testing/index.js'
import { HEALTHY_STORE_TIMEOUT_MS, itFulfils } from '../support/contract.js'
import { PG_URL, testSchema } from '../support/postgres.js'
import { testRedis } from '../leased/support.js'

const keys = { k1: randomBytes(32) }
const encrypt = <S extends Parameters<typeof encryptedStore>[0]>(store: S) => encryptedStore(store, { keys, current: 'k1' })

/** The three ways a window is built: plain, encrypted stores in it, or the window encrypted. */
const orders = ['plain stores', 'encrypted stores in the window', 'the window encrypted'] as const
type Order = (typeof orders)[number]

function keyWindow(order: Order, current: KeyStore<PgClient>, previous: KeyStore<PgClient> & KeyPeek): KeyStore<PgClient> {
  if (order === 'plain stores') return dualReadKeyStore({ current, previous })
  if (order === 'encrypted stores in the window') return dualReadKeyStore({ current: encrypt(current), previous: encrypt(previous) })
  return encrypt(dualReadKeyStore({ current, previous }))
}

function leasedWindow(order: Order, current: LeasedStore, previous: LeasedStore & KeyPeek): LeasedStore {
  if (order === 'plain stores') return dualReadStore({ current, previous })
  if (order === 'encrypted stores in the window') return dualReadStore({ current: encrypt(current), previous: encrypt(previous) })
  return encrypt(dualReadStore({ current, previous }))
}

const db = await testSchema('idem_contract_dual_read', 20)
describe.skipIf(db === undefined)('dualReadKeyStore (Postgres daily partitions in front of idem_keys)', () => {
  const { pool } = db!
  // The window peeks previous while a claim holds a connection of current's pool: previous gets a pool of its own.
  const peekPool = new pg.Pool({ connectionString: PG_URL, max: 10, connectionTimeoutMillis: 10_000 })
  peekPool.on('error', () => {})
  const down: pg.Pool[] = []
  afterAll(async () => {
    for (const p of down) await p.end()
    await peekPool.end()
    await db?.drop()
  })

  // Each order in a schema of its own: a plaintext row is unreadable to an encrypted store, as it should be.
  describe.each(orders.map((order, i) => [order, `${db!.schema}_${i}`] as const))('%s', (order, schema) => {
    const current = postgresStore({ pool, schema, keyLayout: 'daily-partitions', partitionDaysAhead: 2 })
    const previous = postgresStore({ pool: peekPool, schema })
    beforeAll(async () => {
      await pool.query(`CREATE SCHEMA "${schema}"`)
      await previous.migrate()
      await current.migrate()
      await pool.query(`CREATE TABLE "${schema}".effects (id text NOT NULL)`)
    })
    afterAll(async () => void (await pool.query(`DROP SCHEMA "${schema}" CASCADE`)))

    itFulfils(
      keyStoreContract(() => ({
        store: keyWindow(order, current, previous),
        writeEffect: async (tx: PgClient, id: string) => void (await tx.query(`INSERT INTO "${schema}".effects (id) VALUES ($1)`, [id])),
        countEffects: async (id: string) => Number((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE id = $1`, [id])).rows[0].n),
        unavailableStore: () => {
          // The window's own failure: previous cannot be consulted (nothing listens on port 1).
          const closed = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
          down.push(closed)
          return keyWindow(order, current, postgresStore({ pool: closed, schema }))
        },
      })),
    )
  })
})

const redis = await testRedis('contract-dual-read')
describe.skipIf(redis === undefined)('dualReadStore (two Redis prefixes)', () => {
  const { client, prefix } = redis!
  const closed: Redis[] = []
  afterAll(async () => {
    for (const c of closed) c.disconnect()
    await redis?.drop()
  })

  // Each order under a prefix of its own, as each Postgres order has its own schema.
  describe.each(orders.map((order, i) => [order, `${prefix}${i}:`] as const))('%s', (order, under) => {
    const current = redisStore({ client, prefix: `${under}current:`, timeoutMs: HEALTHY_STORE_TIMEOUT_MS })
    const previous = redisStore({ client, prefix: `${under}previous:`, timeoutMs: HEALTHY_STORE_TIMEOUT_MS })
    itFulfils(
      leasedStoreContract(() => ({
        store: leasedWindow(order, current, previous),
        unavailableStore: () => {
          // The window's own failure: previous cannot be consulted (nothing listens on port 1).
          const down = new Redis(1, '127.0.0.1', { lazyConnect: true })
          down.on('error', () => {})
          closed.push(down)
          return leasedWindow(order, current, redisStore({ client: down, prefix: `${under}previous:`, timeoutMs: 300 }))
        },
      })),
    )
  })
})
