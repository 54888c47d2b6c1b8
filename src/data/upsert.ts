import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import type { SqlDialect } from '../ports/sql-dialect.js'
import { quoteColumns, quoteIdentifier, quoteTable } from './identifier.js'

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
  /** The statement, with the dialect's placeholders (`$n` on Postgres, `?` on SQLite). */
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
 * parameters. The dialect comes from the store: `postgresDialect` (`idem/postgres`) or
 * `sqliteDialect` (`idem/sqlite`).
 *
 * @throws InvalidOptionError naming the option that is malformed
 * @example
 * const sql = upsertSql(postgresDialect, { table: 'summaries', key: 'id', columns: ['intake_id', 'summary'] })
 * await client.query(sql.text, sql.values({ id, intake_id, summary }))
 * @see docs/data.md
 */
export function upsertSql(dialect: SqlDialect<unknown>, spec: UpsertSpec): UpsertSql {
  return upsertStatement(dialect, spec, 'upsertSql')
}

/**
 * Upserts one row through the dialect's client: on Postgres a pg client (use the client
 * of your open transaction to make the write part of it) or pool, and a promise; on
 * SQLite a database of any driver, synchronously, so it fits inside a transaction
 * (`db.transaction(...)` on better-sqlite3 and bun:sqlite, the SQLite store's
 * `transaction` on any of them).
 * @returns true when a row was inserted or changed; false when `skipUnchanged` found it identical, or it existed and `columns` is empty
 * @throws InvalidOptionError naming the argument or option that is malformed
 * @example
 * await upsert(postgresDialect, client, { table: 'chunks', key: 'id', columns: ['text'] }, { id: contentId.uuid(doc, n), text })
 * db.transaction(() => upsert(sqliteDialect, db, { table: 'chunks', key: 'id', columns: ['text'] }, { id, text }))()
 */
export function upsert<Client, Written extends boolean | Promise<boolean>>(
  dialect: SqlDialect<Client, Written>,
  client: Client,
  spec: UpsertSpec,
  row: object,
): Written {
  const sql = upsertStatement(dialect, spec, 'upsert')
  if (!dialect.isClient(client)) throw new InvalidOptionError(`upsert: "client" must be ${dialect.clientName}`)
  return dialect.write(client, sql.text, sql.values(row))
}

const SPEC = optionNames<UpsertSpec>({ table: true, schema: true, key: true, columns: true, skipUnchanged: true })

function upsertStatement(dialect: SqlDialect<unknown>, spec: UpsertSpec, caller: string): UpsertSql {
  assertDialect(dialect, caller)
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
  const placeholders = all.map((_, index) => dialect.placeholder(index + 1)).join(', ')
  const { into, existing } = dialect.upsertTarget(table, quoteIdentifier(spec.table, `${caller}: option "table"`))
  let text = `INSERT INTO ${into} (${all.join(', ')}) VALUES (${placeholders}) ON CONFLICT (${keys.join(', ')}) `
  if (others.length === 0) {
    text += 'DO NOTHING'
  } else {
    text += `DO UPDATE SET ${others.map((c) => `${c} = excluded.${c}`).join(', ')}`
    if (spec.skipUnchanged === true) text += ` WHERE ${dialect.changed(existing, others)}`
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

/**
 * Checks that `dialect` is a store's SQL dialect.
 * @throws InvalidOptionError naming `caller` otherwise
 */
export function assertDialect(dialect: unknown, caller: string): asserts dialect is SqlDialect<unknown> {
  const candidate = dialect as Partial<Record<keyof SqlDialect<unknown>, unknown>> | null
  const usable =
    candidate !== null &&
    typeof candidate === 'object' &&
    typeof candidate.placeholder === 'function' &&
    typeof candidate.upsertTarget === 'function' &&
    typeof candidate.read === 'function' &&
    typeof candidate.write === 'function'
  if (!usable) {
    throw new InvalidOptionError(`${caller}: "dialect" must be a store's SQL dialect: postgresDialect (idem/postgres) or sqliteDialect (idem/sqlite)`)
  }
}
