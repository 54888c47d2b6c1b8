// Opens the example's database: SQLite by default (a file under .data/), Postgres when
// DATABASE_URL is set. Both hold the app's tables and idem's, so effects and keys
// commit together.
import Database from 'better-sqlite3'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { postgresDialect, postgresStore } from 'idem/postgres'
import { sqliteDialect, sqliteStore } from 'idem/sqlite'
import { createTables, pgSql, sqliteSql } from './db.mjs'

/**
 * @param {{ file?: string, url?: string, schema?: string }} where
 */
export async function openDatabase({ file, url, schema = 'public' }) {
  if (url) {
    const { default: pg } = await import('pg')
    // search_path is set when each connection starts, so the app's unqualified table
    // names resolve to the example's schema.
    const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 5_000, options: `-c search_path="${schema}"` })
    // An idle connection the server drops (a restart, a failover) is reported here; without
    // a listener it would crash the service. The next query gets a fresh connection.
    pool.on('error', (error) => console.error(`claims-intake: idle Postgres connection failed: ${error.message}`))
    await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`)
    const store = postgresStore({ pool, schema })
    await store.migrate()
    const sql = pgSql(pool)
    await createTables(sql)
    return {
      kind: 'postgres',
      where: `${url.replace(/\/\/[^@]*@/, '//')} (schema ${schema})`,
      reset: `psql "${url}" -c 'DROP SCHEMA "${schema}" CASCADE'`,
      store,
      sql,
      txSql: pgSql,
      connection: { pool, schema },
      // What idem/data's reconcile reads the app's tables through.
      data: { dialect: postgresDialect, client: pool, schema },
      close: () => pool.end(),
    }
  }
  mkdirSync(dirname(file), { recursive: true })
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  const store = sqliteStore({ db })
  store.migrate()
  const sql = sqliteSql(db)
  await createTables(sql)
  return {
    kind: 'sqlite',
    where: file,
    reset: `rm -f ${file} ${file}-wal ${file}-shm`,
    store,
    sql,
    txSql: sqliteSql,
    connection: { db },
    data: { dialect: sqliteDialect, client: db },
    close: async () => db.close(),
  }
}
