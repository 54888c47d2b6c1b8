// The Postgres side of the queue benches (bench:queue, bench:inbox-parts).
import pg from 'pg'
import { postgresStore } from '../dist/stores/postgres/index.js'
// The store's own statement, from the build: the benches' hand-written row is exactly it.
import * as postgresSql from '../dist/stores/postgres/dialect/index.js'

/**
 * A Postgres schema of the bench's own (named for `prefix` and the process), created
 * afresh and migrated, on a pool of `poolSize` connections, with the `claims` table the
 * queue benches' handlers write to. `drop()` removes it and ends the pool.
 */
export async function queueBenchDatabase(prefix, poolSize) {
  const url = process.env.IDEM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const schema = `${prefix}_${process.pid}`
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 10_000 })
  // As the docs ask of every app: an idle connection Postgres drops must not end the bench.
  pool.on('error', (error) => console.error(`idle Postgres connection failed: ${error.message}`))
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`)
  const store = postgresStore({ pool, schema })
  await store.migrate()
  await pool.query(`CREATE TABLE ${schema}.claims (message_id text NOT NULL, amount integer NOT NULL)`)
  const insert = (tx, body, id) => tx.query(`INSERT INTO ${schema}.claims (message_id, amount) VALUES ($1, $2)`, [id, body.amount])
  return {
    pool,
    schema,
    store,
    /** The handler both benches run: one row per message. */
    insert,
    async drop() {
      await pool.query(`DROP SCHEMA ${schema} CASCADE`)
      await pool.end()
    },
  }
}

/**
 * The store's own claim of an inbox id (`inboxStatements(schema).mark` in dialect/inbox.ts),
 * for benches that write the inbox's row by hand: `prepare` once per connection, then
 * `execute(consumer, id, ttlMs)` with SQL literals, both in the simple protocol, so that
 * BEGIN and it share one round trip. It is prepared under a name of the bench's, so it
 * never meets the store's own on a shared connection.
 */
export function inboxMarkByHand(schema) {
  const { text } = postgresSql.inboxStatements(schema).mark
  return {
    prepare: `PREPARE bench_inbox_mark(text, text, bigint) AS ${text}`,
    execute: (consumer, id, ttlMs) => `EXECUTE bench_inbox_mark(${consumer}, ${id}, ${ttlMs})`,
  }
}
