import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { Store } from '../../../src/core/store.js'
import { postgresStore, type PgClient } from '../../../src/stores/postgres/index.js'
import { sqliteStore, type SqliteDatabase } from '../../../src/stores/sqlite/index.js'
import { testSchema } from '../../support/postgres.js'

/** A real store plus what the tests need to look behind it: effect rows and key rows. */
export interface Backend<Tx = unknown> {
  name: 'postgres' | 'sqlite'
  store: Store<Tx>
  /** A store of the same kind whose backend is unreachable. */
  downStore(): Store<Tx>
  /** Writes one effect row tagged `id` through the request's transaction. */
  writeEffect(tx: Tx, id: string): Promise<void>
  countEffects(id: string): Promise<number>
  /** Stored keys: all of them, or those equal to `key`. */
  countKeys(key?: string): Promise<number>
  close(): Promise<void>
}

/** Postgres in a schema of its own; undefined when Postgres is unreachable outside CI. */
export async function postgresBackend(prefix: string): Promise<Backend<PgClient> | undefined> {
  const db = await testSchema(prefix, 12)
  if (db === undefined) return undefined
  const { pool, schema } = db
  const store = postgresStore({ pool, schema })
  await store.migrate()
  await pool.query(`CREATE TABLE "${schema}".effects (id text NOT NULL)`)
  const down = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
  down.on('error', () => {})
  return {
    name: 'postgres',
    store,
    // Nothing listens on port 1: connecting is refused at once.
    downStore: () => postgresStore({ pool: down, schema }),
    async writeEffect(tx, id) {
      await tx.query(`INSERT INTO "${schema}".effects (id) VALUES ($1)`, [id])
    },
    async countEffects(id) {
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE id = $1`, [id])
      return rows[0].n as number
    },
    async countKeys(key) {
      const { rows } =
        key === undefined
          ? await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys`)
          : await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys WHERE key = $1`, [key])
      return rows[0].n as number
    },
    async close() {
      await down.end()
      await db.drop()
    },
  }
}

/** SQLite in a temporary file of its own, in WAL mode. */
export function sqliteBackend(prefix: string): Backend<SqliteDatabase> {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
  const db = new Database(join(dir, 'http.db'))
  db.pragma('journal_mode = WAL')
  const store = sqliteStore({ db })
  store.migrate()
  db.exec('CREATE TABLE effects (id TEXT NOT NULL)')
  const effects = db.prepare('SELECT count(*) AS n FROM effects WHERE id = ?')
  const keys = db.prepare('SELECT count(*) AS n FROM idem_keys WHERE key = ?')
  const allKeys = db.prepare('SELECT count(*) AS n FROM idem_keys')
  const closed = new Database(join(dir, 'closed.db'))
  const downStore = sqliteStore({ db: closed })
  downStore.migrate()
  closed.close()
  return {
    name: 'sqlite',
    store,
    downStore: () => downStore,
    async writeEffect(tx, id) {
      tx.prepare('INSERT INTO effects (id) VALUES (?)').run(id)
    },
    countEffects: async (id) => (effects.get(id) as { n: number }).n,
    countKeys: async (key) => ((key === undefined ? allKeys.get() : keys.get(key)) as { n: number }).n,
    async close() {
      db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
