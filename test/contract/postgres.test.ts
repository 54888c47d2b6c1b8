import pg from 'pg'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresStore, type PgClient, type PgExecutor, type PostgresStore } from '../../src/stores/postgres/index.js'
import { inboxTableContract, keyStoreContract, onceTableContract, outboxTableContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'
import { testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('idem_contract', 20)

describe.skipIf(db === undefined)('postgres store contracts', () => {
  const { pool, schema } = db as TestSchema
  let store: PostgresStore
  const down: pg.Pool[] = []
  beforeAll(async () => {
    store = postgresStore({ pool, schema })
    await store.migrate()
    await pool.query(`CREATE TABLE "${schema}".effects (id text NOT NULL)`)
  })
  afterAll(async () => {
    for (const p of down) await p.end()
    await db?.drop()
  })

  const unavailableStore = (): PostgresStore => {
    // Nothing listens on port 1: connecting is refused at once.
    const closed = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
    down.push(closed)
    return postgresStore({ pool: closed, schema })
  }
  const effects = {
    writeEffect: async (tx: PgClient, id: string) => {
      await tx.query(`INSERT INTO "${schema}".effects (id) VALUES ($1)`, [id])
    },
    countEffects: async (id: string) => {
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE id = $1`, [id])
      return rows[0].n as number
    },
  }
  const inTransaction = async (work: (tx: PgExecutor) => unknown): Promise<void> => {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await work(client)
      await client.query('COMMIT')
    } catch (error) {
      await client.query('ROLLBACK')
      throw error
    } finally {
      client.release()
    }
  }

  describe('keys (KeyStore)', () => itFulfils(keyStoreContract(() => ({ store, ...effects, unavailableStore }))))
  describe('inbox (InboxTable, on idem_inbox)', () => itFulfils(inboxTableContract(() => ({ store, ...effects, unavailableStore }))))
  describe('outbox (OutboxTable)', () => itFulfils(outboxTableContract(() => ({ store, inTransaction, unavailableStore }))))
  describe('once (OnceTable)', () => itFulfils(onceTableContract(() => ({ store, inTransaction, concurrentTransactions: true }))))

  it('prune() removes expired inbox ids along with expired keys, and keeps live ones', async () => {
    const consumer = `prune-${randomUUID()}`
    for (const [key, retentionMs] of [['gone', 1], ['kept', 60_000]] as const) {
      const session = await store.inbox.begin({ consumer, key, waitMs: 0, retentionMs })
      await session.commit()
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await store.prune({ batchSize: 1 })).toBeGreaterThanOrEqual(1)
    const { rows } = await pool.query(`SELECT message_key FROM "${schema}".idem_inbox WHERE consumer = $1`, [consumer])
    expect(rows).toEqual([{ message_key: 'kept' }])
  })
})
