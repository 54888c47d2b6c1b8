import type { PgQueryable } from '../../../ports/sql-clients.js'
import type { SqlDialect } from '../../../ports/sql-dialect.js'

/**
 * Postgres as `idem/data`'s helpers write to it (`upsertSql`, `upsert`, `reconcile`):
 * `$n` placeholders, the existing row reached through an alias, whole rows compared with
 * `IS DISTINCT FROM`, statements run through a pg client or pool (pass the client of
 * your open transaction to make a write part of it).
 * @example
 * await upsert(postgresDialect, client, { table: 'chunks', key: 'id', columns: ['text'] }, { id, text })
 * @see docs/data.md
 */
export const postgresDialect: SqlDialect<PgQueryable, Promise<boolean>> = {
  name: 'Postgres',
  clientName: 'a pg client or pool',
  isClient: (value): value is PgQueryable =>
    value !== null && typeof value === 'object' && typeof (value as Partial<PgQueryable>).query === 'function',
  placeholder: (index) => `$${index}`,
  upsertTarget: (table) => ({ into: `${table} AS "existing"`, existing: '"existing"' }),
  changed(existing, columns) {
    const before = columns.map((c) => `${existing}.${c}`).join(', ')
    const after = columns.map((c) => `excluded.${c}`).join(', ')
    return columns.length === 1 ? `${before} IS DISTINCT FROM ${after}` : `(${before}) IS DISTINCT FROM (${after})`
  },
  write: async (client, text, values) => ((await client.query(text, [...values])).rowCount ?? 0) > 0,
  read: async (client, text, values) => (await client.query(text, [...values])).rows,
  namesMissing: (error) => error instanceof Error && /(relation|column) "[^"]+" does not exist/.test(error.message),
}
