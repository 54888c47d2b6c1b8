import type { SqliteDatabase } from '../../../ports/sql-clients.js'
import type { SqlDialect } from '../../../ports/sql-dialect.js'

/**
 * SQLite as `idem/data`'s helpers write to it (`upsertSql`, `upsert`, `reconcile`): `?`
 * placeholders, the existing row reached through the table's name, columns compared
 * with `IS NOT`, statements run through a better-sqlite3, bun:sqlite or node:sqlite
 * database. Writes are synchronous, so they fit inside a transaction:
 * `db.transaction(...)` on better-sqlite3 and bun:sqlite, the SQLite store's
 * `transaction` on any of them.
 * @example
 * db.transaction(() => upsert(sqliteDialect, db, { table: 'chunks', key: 'id', columns: ['text'] }, { id, text }))()
 * @see docs/data.md
 */
export const sqliteDialect: SqlDialect<SqliteDatabase, boolean> = {
  name: 'SQLite',
  clientName: 'an SQLite database (better-sqlite3, bun:sqlite or node:sqlite)',
  isClient: (value): value is SqliteDatabase =>
    value !== null && typeof value === 'object' && typeof (value as Partial<SqliteDatabase>).prepare === 'function',
  placeholder: () => '?',
  upsertTarget: (table, name) => ({ into: table, existing: name }),
  changed: (existing, columns) => columns.map((c) => `${existing}.${c} IS NOT excluded.${c}`).join(' OR '),
  write: (db, text, values) => Number(db.prepare(text).run(...values).changes) > 0,
  read: async (db, text, values) => db.prepare(text).all(...values),
  namesMissing: (error) => error instanceof Error && /no such (table|column)/.test(error.message),
}
