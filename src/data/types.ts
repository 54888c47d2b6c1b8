/**
 * The one method idem's data helpers need from `pg`, typed by shape so idem does not
 * depend on `pg`'s types: a `pg.Pool`, `pg.PoolClient` or `pg.Client` fits. Pass the
 * client inside your transaction to make the write part of it.
 */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>
}

export type { SqliteDatabase } from '../stores/sqlite/types.js'
