// idem/lambda on Postgres, the transactional engine: the function's effect and the key
// commit in one transaction (RDS or Aurora, through RDS Proxy or not), the SQS inbox's ids
// with each record's effects. The scenarios are in scenarios.ts.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe } from 'vitest'
import { createIdem } from '../../src/core/engine.js'
import { createInbox } from '../../src/queue/index.js'
import { postgresStore, type PgClient, type PostgresStore } from '../../src/stores/postgres/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { lambdaScenarios, type LambdaBackend } from './scenarios.js'

const db = await testSchema('lambda', 30)

describe.skipIf(db === undefined)('idem/lambda on Postgres (transactional)', () => {
  const { pool, schema } = db as TestSchema
  let store: PostgresStore
  beforeAll(async () => {
    store = postgresStore({ pool, schema })
    await store.migrate()
    // No unique constraint: a second run of an effect would show as a second row.
    await pool.query(`CREATE TABLE "${schema}".shipments (order_id text NOT NULL)`)
  })
  afterAll(() => db?.drop())

  let backend: LambdaBackend<PgClient, PgClient> | undefined
  lambdaScenarios('Postgres', () => {
    backend ??= {
      idem: createIdem({ store }),
      retryWaitMs: 2_000,
      async effect(tx, id) {
        await tx.query(`INSERT INTO "${schema}".shipments (order_id) VALUES ($1)`, [id])
      },
      async count(id) {
        const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".shipments WHERE order_id = $1`, [id])
        return rows[0]!.n
      },
      inbox: (maxAttempts) => createInbox({ store, consumer: `orders-${randomUUID()}`, ...(maxAttempts === undefined ? {} : { maxAttempts }) }),
      async recordEffect(tx, id) {
        await tx.query(`INSERT INTO "${schema}".shipments (order_id) VALUES ($1)`, [id])
      },
    }
    return backend
  })
})
