// encryptedStore keeps the port contracts of the store it wraps: the key store suite
// over SQLite and Postgres, the leased suite over memory and Redis, all encrypted.
import Database from 'better-sqlite3'
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe } from 'vitest'
import { encryptedStore } from '../../src/stores/encrypted.js'
import { memoryLeasedStore } from '../../src/stores/memory/index.js'
import { postgresStore, type PgClient } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { keyStoreContract, leasedStoreContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'
import { testSchema } from '../support/postgres.js'
import { testRedis } from '../leased/support.js'

const keys = { old: randomBytes(32), current: randomBytes(32) }
const encrypt = <S extends Parameters<typeof encryptedStore>[0]>(store: S) => encryptedStore(store, { keys, current: 'current' })

describe('encrypted SQLite key store', () => {
  const db = new Database(':memory:')
  const plain = sqliteStore({ db: db as unknown as SqliteDatabase })
  plain.migrate()
  db.exec('CREATE TABLE effects (id TEXT NOT NULL)')
  const count = db.prepare('SELECT count(*) AS n FROM effects WHERE id = ?')
  itFulfils(
    keyStoreContract(() => ({
      store: encrypt(plain),
      writeEffect: (tx: SqliteDatabase, id: string) => void tx.prepare('INSERT INTO effects (id) VALUES (?)').run(id),
      countEffects: (id: string) => (count.get(id) as { n: number }).n,
      unavailableStore: () => {
        const closed = new Database(':memory:')
        const down = sqliteStore({ db: closed as unknown as SqliteDatabase })
        down.migrate()
        closed.close()
        return encrypt(down)
      },
    })),
  )
})

const db = await testSchema('idem_contract_encrypted', 20)
describe.skipIf(db === undefined)('encrypted Postgres key store', () => {
  const { pool, schema } = db!
  const plain = postgresStore({ pool, schema })
  const down: pg.Pool[] = []
  beforeAll(async () => {
    await plain.migrate()
    await pool.query(`CREATE TABLE "${schema}".effects (id text NOT NULL)`)
  })
  afterAll(async () => {
    for (const p of down) await p.end()
    await db?.drop()
  })
  itFulfils(
    keyStoreContract(() => ({
      store: encrypt(plain),
      writeEffect: async (tx: PgClient, id: string) => void (await tx.query(`INSERT INTO "${schema}".effects (id) VALUES ($1)`, [id])),
      countEffects: async (id: string) => Number((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE id = $1`, [id])).rows[0].n),
      unavailableStore: () => {
        // Nothing listens on port 1: connecting is refused at once.
        const closed = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
        down.push(closed)
        return encrypt(postgresStore({ pool: closed, schema }))
      },
    })),
  )
})

describe('encrypted memory leased store', () => {
  itFulfils(
    leasedStoreContract(() => ({
      store: encrypt(memoryLeasedStore()),
      unavailableStore: () => {
        const closed = memoryLeasedStore()
        closed.close()
        return encrypt(closed)
      },
    })),
  )
})

const redis = await testRedis('contract-encrypted')
const closed: Redis[] = []
describe.skipIf(redis === undefined)('encrypted Redis leased store', () => {
  afterAll(async () => {
    for (const client of closed) client.disconnect()
    await redis?.drop()
  })
  itFulfils(
    leasedStoreContract(() => ({
      store: encrypt(redisStore({ client: redis!.client, prefix: redis!.prefix })),
      unavailableStore: () => {
        // Nothing listens on port 1: every connection attempt is refused.
        const down = new Redis(1, '127.0.0.1', { lazyConnect: true })
        closed.push(down)
        return encrypt(redisStore({ client: down, prefix: redis!.prefix, timeoutMs: 300 }))
      },
    })),
  )
})
