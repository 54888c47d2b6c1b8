import pg from 'pg'
import { afterAll, beforeAll, describe } from 'vitest'
import { leasedPostgresStore, type LeasedPostgresStore } from '../../src/stores/postgres/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { itFulfilsTheLeasedStoreContract } from './contract.js'

const db = await testSchema('idem_leased_contract', 20)

describe.skipIf(db === undefined)('postgres leased store contract', () => {
  const { pool, schema } = db as TestSchema
  let store: LeasedPostgresStore
  const closed: pg.Pool[] = []
  beforeAll(async () => {
    store = leasedPostgresStore({ pool, schema })
    await store.migrate()
  })
  afterAll(async () => {
    for (const p of closed) await p.end()
    await db?.drop()
  })

  itFulfilsTheLeasedStoreContract(() => ({
    store,
    unavailableStore: () => {
      // Nothing listens on port 1: connecting is refused at once.
      const down = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test' })
      closed.push(down)
      return leasedPostgresStore({ pool: down, schema })
    },
  }))
})
