// What the receiver tests read back from Postgres: the rows each handler wrote (one per
// run) and the ids each inbox recorded, in a test file's own schema.
import { postgresStore } from '../../../src/stores/postgres/index.js'
import type { PgClient } from '../../../src/stores/postgres/driver/types.js'
import type { TestSchema } from '../../support/postgres.js'

/** The store on `db`'s schema, and the handlers' table beside its inbox. */
export function handledOn({ pool, schema }: TestSchema) {
  const store = postgresStore({ pool, schema })
  const table = `"${schema}".handled`
  const count = async (sql: string, values: unknown[]) => (await pool.query(sql, values)).rows[0].n as number
  return {
    store,
    /** Migrates the store and makes the handlers' table: call it in `beforeAll`. */
    async setUp(): Promise<void> {
      await store.migrate()
      await pool.query(`CREATE TABLE ${table} (n serial PRIMARY KEY, consumer text NOT NULL, event_id text NOT NULL)`)
    },
    /** What a handler writes, through its transaction, for each run. */
    async write(tx: PgClient, consumer: string, id: string): Promise<void> {
      await tx.query(`INSERT INTO ${table} (consumer, event_id) VALUES ($1, $2)`, [consumer, id])
    },
    /** The ids `consumer`'s handler ran for, in order. */
    runs: async (consumer: string) => (await pool.query(`SELECT event_id FROM ${table} WHERE consumer = $1 ORDER BY n`, [consumer])).rows.map((row) => row.event_id as string),
    /** Times `consumer`'s handler ran for `id`. */
    runsOf: (consumer: string, id: string) => count(`SELECT count(*)::int AS n FROM ${table} WHERE consumer = $1 AND event_id = $2`, [consumer, id]),
    /** The ids `consumer`'s inbox recorded. */
    recorded: (consumer: string) => count(`SELECT count(*)::int AS n FROM "${schema}".idem_inbox WHERE consumer = $1`, [consumer]),
  }
}
