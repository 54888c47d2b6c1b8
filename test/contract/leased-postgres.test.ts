import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { leasedPostgresStore, type LeasedPostgresStore } from '../../src/stores/postgres/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { leasedStoreContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'

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

  itFulfils(leasedStoreContract(() => ({
    store,
    unavailableStore: () => {
      // Nothing listens on port 1: connecting is refused at once.
      const down = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
      closed.push(down)
      return leasedPostgresStore({ pool: down, schema })
    },
  })))

  it('prune deletes expired leased keys in bounded batches and keeps live ones', async () => {
    for (let i = 0; i < 7; i++) {
      const claim = await store.claim('prune', `old-${i}`, 'fp', 1_000, 1)
      if (claim.state === 'acquired') await claim.lease.complete('null', 1)
    }
    const live = await store.claim('prune', 'live', 'fp', 1_000, 60_000)
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    expect(await store.prune({ batchSize: 3 })).toBe(7)
    const { rows } = await pool.query(`SELECT key FROM "${schema}".idem_leases WHERE scope = 'prune'`)
    expect(rows).toEqual([{ key: 'live' }])
    expect(live.state).toBe('acquired')
  })
})
