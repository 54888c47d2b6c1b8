import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../core/validate.js'
import { quoteColumns, quoteTable } from './identifier.js'
import type { PgQueryable, SqliteDatabase } from '../ports/sql-clients.js'

/** The SQL dialects the upsert helpers write. */
export type Dialect = 'postgres' | 'sqlite'

/** Which row to write and what a replay overwrites. */
export interface UpsertSpec {
  /** The table written to. A plain identifier. */
  table: string
  /** The table's schema (Postgres) or attached database (SQLite). @default the connection's default */
  schema?: string
  /**
   * The column(s) the row is identified by, usually a content id. They must carry a
   * primary key or unique constraint, which is what makes a replay overwrite instead of
   * insert.
   */
  key: string | readonly string[]
  /** The other columns written; a replay overwrites each of them. May be empty (write-once rows). */
  columns: readonly string[]
  /**
   * Leave a row alone when every column already holds the new value, so a replay
   * writes nothing (no dead tuple in Postgres, no trigger fired) and reports
   * `false`. Postgres needs an equality operator on each column for this (`jsonb`
   * has one, `json` does not). @default false
   */
  skipUnchanged?: boolean
}

/** An upsert statement, built once and run many times. */
export interface UpsertSql {
  /** The statement, with `$n` (Postgres) or `?` (SQLite) placeholders. */
  readonly text: string
  /** The column each placeholder binds, in order: the key columns, then `columns`. */
  readonly columns: readonly string[]
  /**
   * The placeholder values for one row (any object, typed rows included), in `columns`
   * order. Properties of `row` that are not named are ignored.
   * @throws InvalidOptionError when the row has no value (undefined) for a named column; use null for SQL NULL
   */
  values(row: object): unknown[]
}

/**
 * Builds `INSERT … ON CONFLICT (key) DO UPDATE SET …` for a table whose rows are
 * identified by a content id, so writing the same row twice leaves one row holding
 * the latest values. Identifiers are validated and quoted; values are always bound as
 * parameters.
 *
 * @throws InvalidOptionError naming the option that is malformed
 * @example
 * const sql = upsertSql('postgres', { table: 'summaries', key: 'id', columns: ['intake_id', 'summary'] })
 * await client.query(sql.text, sql.values({ id, intake_id, summary }))
 * @see docs/data.md
 */
export function upsertSql(dialect: Dialect, spec: UpsertSpec): UpsertSql {
  return upsertStatement(dialect, spec, 'upsertSql')
}

const SPEC = optionNames<UpsertSpec>({ table: true, schema: true, key: true, columns: true, skipUnchanged: true })

function upsertStatement(dialect: Dialect, spec: UpsertSpec, caller: string): UpsertSql {
  if (dialect !== 'postgres' && dialect !== 'sqlite') {
    throw new InvalidOptionError(`${caller}: "dialect" must be "postgres" or "sqlite", got ${JSON.stringify(dialect)}`)
  }
  if (spec === null || typeof spec !== 'object') throw new InvalidOptionError(`${caller}: pass { table, key, columns }`)
  assertKnownOptions(caller, spec, SPEC)
  const table = quoteTable(spec.table, spec.schema, caller)
  const keyNames = typeof spec.key === 'string' ? [spec.key] : spec.key
  const keys = quoteColumns(keyNames, `${caller}: option "key"`)
  const others = quoteColumns(spec.columns, `${caller}: option "columns"`, { allowEmpty: true })
  const overlap = others.find((column) => keys.includes(column))
  if (overlap !== undefined) {
    throw new InvalidOptionError(`${caller}: option "columns" must not repeat the key column ${overlap}; list it only in "key"`)
  }
  const names = [...(keyNames as readonly string[]), ...spec.columns]
  const all = [...keys, ...others]
  const placeholders = all.map((_, index) => (dialect === 'postgres' ? `$${index + 1}` : '?')).join(', ')

  // Postgres reaches the existing row through an alias; SQLite through the table's name.
  const existing = dialect === 'postgres' ? '"existing"' : table.slice(table.lastIndexOf('.') + 1)
  let text = `INSERT INTO ${table}${dialect === 'postgres' ? ' AS "existing"' : ''} (${all.join(', ')}) VALUES (${placeholders}) ON CONFLICT (${keys.join(', ')}) `
  if (others.length === 0) {
    text += 'DO NOTHING'
  } else {
    text += `DO UPDATE SET ${others.map((c) => `${c} = excluded.${c}`).join(', ')}`
    if (spec.skipUnchanged === true) text += ` WHERE ${changed(dialect, existing, others)}`
  }

  return {
    text,
    columns: names,
    values(row) {
      if (row === null || typeof row !== 'object') throw new InvalidOptionError('upsert: the row must be an object')
      return names.map((name) => {
        const value = (row as Record<string, unknown>)[name]
        if (value === undefined) {
          throw new InvalidOptionError(`upsert: the row has no value for column "${name}" (use null to write NULL)`)
        }
        return value
      })
    },
  }
}

// True when any column would change. NULL-safe in both dialects, so NULL → NULL is "unchanged".
function changed(dialect: Dialect, existing: string, columns: readonly string[]): string {
  if (dialect === 'postgres') {
    const before = columns.map((c) => `${existing}.${c}`).join(', ')
    const after = columns.map((c) => `excluded.${c}`).join(', ')
    return columns.length === 1 ? `${before} IS DISTINCT FROM ${after}` : `(${before}) IS DISTINCT FROM (${after})`
  }
  return columns.map((c) => `${existing}.${c} IS NOT excluded.${c}`).join(' OR ')
}

/**
 * Upserts one row through a pg client (use the client of your open transaction to make
 * the write part of it).
 * @returns true when a row was inserted or changed; false when `skipUnchanged` found it identical, or it existed and `columns` is empty
 * @example
 * await upsertPostgres(client, { table: 'chunks', key: 'id', columns: ['text'] }, { id: contentId.uuid(doc, n), text })
 */
export async function upsertPostgres(client: PgQueryable, spec: UpsertSpec, row: object): Promise<boolean> {
  if (client === null || typeof client !== 'object' || typeof client.query !== 'function') {
    throw new InvalidOptionError('upsertPostgres: "client" must be a pg client or pool')
  }
  const sql = upsertStatement('postgres', spec, 'upsertPostgres')
  const result = await client.query(sql.text, sql.values(row))
  return (result.rowCount ?? 0) > 0
}

/**
 * Upserts one row through an SQLite database (better-sqlite3, bun:sqlite, node:sqlite).
 * Synchronous, so it fits inside a transaction: `db.transaction(...)` on better-sqlite3
 * and bun:sqlite, the SQLite store's `transaction` on any of them.
 * @returns true when a row was inserted or changed; false when `skipUnchanged` found it identical, or it existed and `columns` is empty
 * @example
 * db.transaction(() => upsertSqlite(db, { table: 'chunks', key: 'id', columns: ['text'] }, { id, text }))()
 */
export function upsertSqlite(db: SqliteDatabase, spec: UpsertSpec, row: object): boolean {
  if (db === null || typeof db !== 'object' || typeof db.prepare !== 'function') {
    throw new InvalidOptionError('upsertSqlite: "db" must be an SQLite database (better-sqlite3, bun:sqlite or node:sqlite)')
  }
  const sql = upsertStatement('sqlite', spec, 'upsertSqlite')
  return Number(db.prepare(sql.text).run(...sql.values(row)).changes) > 0
}
