import pg from 'pg'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, type Store } from '../../src/index.js'
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

  const harness = (of: (store: PostgresStore) => Store<PgClient>) => () => ({
    store: of(store),
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
      return of(postgresStore({ pool: closed, schema }))
    },
  })

  itFulfilsTheStoreContract(harness((store) => store))

  describe('its inbox id table (idem_inbox: no outcomes, no fingerprints)', () => {
    itFulfilsTheStoreContract(harness((store) => store.inboxIds), { keepsOutcomes: false })

    it('refuses a call that would keep an outcome, which the table has no room for', async () => {
      await expect(store.inboxIds.begin({ scope: 'c', key: 'k', waitMs: 0 })).rejects.toThrow(/storeOutcome: false/)
    })

    it('prune() removes expired inbox ids along with expired keys, and keeps live ones', async () => {
      const idem = createIdem({ store: store.inboxIds })
      const consumer = `prune-${randomUUID()}`
      for (const [key, ttlMs] of [['gone', 1], ['kept', 60_000]] as const) {
        await idem.run({ scope: consumer, key, fingerprint: 'f', ttlMs, storeOutcome: false }, () => null)
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(await store.prune({ batchSize: 1 })).toBeGreaterThanOrEqual(1)
      const { rows } = await pool.query(`SELECT message_key FROM "${schema}".idem_inbox WHERE consumer = $1`, [consumer])
      expect(rows).toEqual([{ message_key: 'kept' }])
    })
  })
})
