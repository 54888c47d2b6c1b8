// encryptedStore keeps the port contracts of the store it wraps, on every backend: the
// key store suite over SQLite and Postgres, the leased suite over memory, SQLite,
// Postgres, Redis and DynamoDB, all encrypted. Each suite reads every record back
// through every read path the store has (the claim, and peek on Postgres, Redis and
// DynamoDB), so a port method that passed the inner store's rows through would fail.
// Encrypted stores inside a dual-read window, and a window encrypted: test/contract/dual-read.test.ts.
import Database from 'better-sqlite3'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe } from 'vitest'
import { dynamodbStore } from '../../src/stores/dynamodb/index.js'
import { encryptedStore } from '../../src/stores/encrypted.js'
import { memoryLeasedStore } from '../../src/stores/memory/index.js'
import { leasedPostgresStore, postgresStore, type PgClient } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { leasedSqliteStore, sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { keyStoreContract, leasedStoreContract } from '../../src/testing/index.js'
import { HEALTHY_STORE_TIMEOUT_MS, itFulfils } from '../support/contract.js'
import { localClient, testDynamo, type TestDynamo } from '../support/dynamodb.js'
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
describe.skipIf(db === undefined)('encrypted Postgres stores', () => {
  const { pool, schema } = db!
  const plain = postgresStore({ pool, schema })
  const down: pg.Pool[] = []
  // Nothing listens on port 1: connecting is refused at once.
  const closedPool = () => {
    const closed = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
    down.push(closed)
    return closed
  }
  beforeAll(async () => {
    await plain.migrate()
    await pool.query(`CREATE TABLE "${schema}".effects (id text NOT NULL)`)
  })
  afterAll(async () => {
    for (const p of down) await p.end()
    await db?.drop()
  })
  describe('keys (KeyStore, KeyPeek)', () =>
    itFulfils(
      keyStoreContract(() => ({
        store: encrypt(plain),
        writeEffect: async (tx: PgClient, id: string) => void (await tx.query(`INSERT INTO "${schema}".effects (id) VALUES ($1)`, [id])),
        countEffects: async (id: string) => Number((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE id = $1`, [id])).rows[0].n),
        unavailableStore: () => encrypt(postgresStore({ pool: closedPool(), schema })),
      })),
    ))
  describe('leased (LeasedStore)', () =>
    itFulfils(
      leasedStoreContract(() => ({
        store: encrypt(leasedPostgresStore({ pool, schema })),
        unavailableStore: () => encrypt(leasedPostgresStore({ pool: closedPool(), schema })),
      })),
    ))
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

describe('encrypted SQLite leased store (a real file in WAL mode)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-encrypted-leased-'))
  const file = new Database(join(dir, 'leased.db'))
  file.pragma('journal_mode = WAL')
  const plain = leasedSqliteStore({ db: file })
  plain.migrate()
  afterAll(() => {
    file.close()
    rmSync(dir, { recursive: true, force: true })
  })
  itFulfils(
    leasedStoreContract(() => ({
      store: encrypt(plain),
      unavailableStore: () => {
        const closed = new Database(join(dir, 'closed.db'))
        const down = leasedSqliteStore({ db: closed })
        down.migrate()
        closed.close()
        return encrypt(down)
      },
    })),
  )
})

const redis = await testRedis('contract-encrypted')
const closed: Redis[] = []
describe.skipIf(redis === undefined)('encrypted Redis leased store (LeasedStore, KeyPeek)', () => {
  afterAll(async () => {
    for (const client of closed) client.disconnect()
    await redis?.drop()
  })
  itFulfils(
    leasedStoreContract(() => ({
      store: encrypt(redisStore({ client: redis!.client, prefix: redis!.prefix, timeoutMs: HEALTHY_STORE_TIMEOUT_MS })),
      unavailableStore: () => {
        // Nothing listens on port 1: every connection attempt is refused.
        const down = new Redis(1, '127.0.0.1', { lazyConnect: true })
        down.on('error', () => {})
        closed.push(down)
        return encrypt(redisStore({ client: down, prefix: redis!.prefix, timeoutMs: 300 }))
      },
    })),
  )
})

const dynamo = await testDynamo('contract_encrypted')
describe.skipIf(dynamo === undefined)('encrypted DynamoDB leased store (LeasedStore, KeyPeek)', () => {
  const { store, table } = dynamo as TestDynamo
  // Nothing listens on port 1: every request is refused.
  const down = localClient('http://127.0.0.1:1', 1)
  afterAll(async () => {
    down.destroy()
    await dynamo?.drop()
  })
  itFulfils(
    leasedStoreContract(() => ({
      store: encrypt(store),
      unavailableStore: () => encrypt(dynamodbStore({ client: down, table, timeoutMs: 1_000 })),
    })),
  )
})
