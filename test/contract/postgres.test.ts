import pg from 'pg'
import { afterAll, beforeAll, describe } from 'vitest'
import { postgresStore, type PgClient, type PostgresStore } from '../../src/stores/postgres/index.js'
import { itFulfilsTheStoreContract } from '../support/contract.js'
import { testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('idem_contract')

describe.skipIf(db === undefined)('postgres store contract', () => {
  const { pool, schema } = db as TestSchema
  let store: PostgresStore
  beforeAll(async () => {
    store = postgresStore({ pool, schema })
    await store.migrate()
    await pool.query(`CREATE TABLE "${schema}".effects (id text NOT NULL)`)
  })
  afterAll(() => db?.drop())

  itFulfilsTheStoreContract(() => ({
    store,
    writeEffect: async (tx: PgClient, id: string) => {
      await tx.query(`INSERT INTO "${schema}".effects (id) VALUES ($1)`, [id])
    },
    countEffects: async (id: string) => {
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE id = $1`, [id])
      return rows[0].n as number
    },
    unavailableStore: () => {
      // Nothing listens on port 1: connecting is refused at once.
      const closed = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
      return postgresStore({ pool: closed, schema })
    },
  }))
})
