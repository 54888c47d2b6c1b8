import type { SqliteDatabase } from '../stores/sqlite/types.js'

/**
 * The one method idem/queue needs from `pg`, typed by shape: a `pg.Pool`,
 * `pg.PoolClient` or `pg.Client` fits. Pass the client of your open transaction where a
 * write must be part of it.
 */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>
}

export type { SqliteDatabase }

/** True for a better-sqlite3 `Database` (it prepares statements; a pg client does not). */
export function isSqlite(db: unknown): db is SqliteDatabase {
  return db !== null && typeof db === 'object' && typeof (db as SqliteDatabase).prepare === 'function'
}

/** True for anything with pg's `query(text, values)`. */
export function isPg(db: unknown): db is PgQueryable {
  return db !== null && typeof db === 'object' && typeof (db as PgQueryable).query === 'function'
}
