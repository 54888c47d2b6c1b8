import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { idemEvents, type EventStream } from '../core/events.js'
import { assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import type { SqlDialect } from '../ports/sql-dialect.js'
import { quoteColumns, quoteTable } from './identifier.js'
import { assertDialect } from './upsert.js'

/** The alert level: 0.01% of rows being duplicates. */
export const DEFAULT_RECONCILE_THRESHOLD = 0.0001
/** How many offending groups a report lists by default. */
export const DEFAULT_RECONCILE_LIMIT = 20

/** What `reconcile` checks: a table and the columns that should be unique, through a store's SQL dialect and its client. */
export interface ReconcileOptions<Client = unknown> {
  /** The database's dialect, from its store: `postgresDialect` (`idem/postgres`) or `sqliteDialect` (`idem/sqlite`). */
  dialect: SqlDialect<Client>
  /** The dialect's client: a pg client or pool; a better-sqlite3, bun:sqlite or node:sqlite database. */
  client: Client
  /** The table to check. A plain identifier. */
  table: string
  /** Its schema (Postgres) or attached database (SQLite). @default the connection's default */
  schema?: string
  /** The columns that should identify a row: rows agreeing on all of them are duplicates. */
  columns: readonly string[]
  /** The duplicate rate above which `exceeded` is true. @default 0.0001 (0.01%) */
  threshold?: number
  /** At most this many offending groups are listed (largest first). @default 20 */
  limit?: number
  /** Where the result is reported (`{ type: 'reconcile' }`), for the duplicate-ratio gauge. @default the process-wide `idemEvents` */
  events?: EventStream
}

/** Rows that share one value of the unique columns. */
export interface DuplicateGroup {
  /** The shared value of each named column. */
  values: Record<string, unknown>
  /** How many rows share it (at least 2). */
  rows: number
}

/**
 * What `reconcile` found: how many rows duplicate others, the largest groups, and
 * whether the rate is above the threshold.
 */
export interface ReconcileReport {
  table: string
  columns: readonly string[]
  /** Rows in the table. */
  totalRows: number
  /** Rows beyond the first of each group: how many rows would go if duplicates were removed. */
  duplicateRows: number
  /** How many values of the unique columns are held by more than one row. */
  groupCount: number
  /** `duplicateRows / totalRows` (0 for an empty table). */
  duplicateRate: number
  threshold: number
  /** True when `duplicateRate` is above `threshold`: the alert, and the CLI's non-zero exit. */
  exceeded: boolean
  /** The largest groups, at most `limit` of them, largest first. */
  groups: DuplicateGroup[]
}

const OPTIONS = optionNames<ReconcileOptions>({ dialect: true, client: true, table: true, schema: true, columns: true, threshold: true, limit: true, events: true })

/**
 * Finds rows that should be unique by `columns` but are not: the after-the-fact check
 * that replays really were absorbed (a consumer without idem, redelivered, leaves two
 * rows for one intent). Reports the duplicate rate and the largest offending groups,
 * and whether the rate is above `threshold`.
 *
 * NULLs count as equal to each other here (as in GROUP BY), so rows agreeing on the
 * columns with NULL in some of them are reported too. The counts and the group list
 * are read by two statements; on a table being written, they may differ slightly.
 * It scans the table: run it on a replica or off-peak for large tables.
 *
 * @throws InvalidOptionError naming the malformed option
 * @example
 * const report = await reconcile({ dialect: postgresDialect, client: pool, table: 'summaries', columns: ['intake_id', 'prompt_version'] })
 * if (report.exceeded) console.error(`${report.duplicateRows} duplicate rows`, report.groups)
 * @see docs/data.md
 */
export async function reconcile<Client>(options: ReconcileOptions<Client>): Promise<ReconcileReport> {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('reconcile: pass { dialect, client, table, columns }')
  assertKnownOptions('reconcile', options, OPTIONS)
  const { threshold = DEFAULT_RECONCILE_THRESHOLD, limit = DEFAULT_RECONCILE_LIMIT, events = idemEvents } = options
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError('reconcile: option "events" must be an event stream (createEventStream())')
  }
  const table = quoteTable(options.table, options.schema, 'reconcile')
  const columns = quoteColumns(options.columns, 'reconcile: option "columns"')
  if (typeof threshold !== 'number' || !(threshold >= 0 && threshold <= 1)) {
    throw new InvalidOptionError(`reconcile: option "threshold" must be a rate between 0 and 1 (0.0001 is 0.01%), got ${String(threshold)}`)
  }
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > 10_000) {
    throw new InvalidOptionError(`reconcile: option "limit" must be a whole number from 0 to 10000, got ${String(limit)}`)
  }
  const { dialect, client } = options
  assertDialect(dialect, 'reconcile')
  if (!dialect.isClient(client)) throw new InvalidOptionError(`reconcile: option "client" must be ${dialect.clientName}`)

  const list = columns.join(', ')
  // Column aliases c0, c1… keep result keys independent of the column names' case.
  const grouped = `SELECT ${columns.map((c, i) => `${c} AS c${i}`).join(', ')}, count(*) AS n FROM ${table} GROUP BY ${list} HAVING count(*) > 1`
  const [summary] = await dialect.read(
    client,
    `SELECT (SELECT count(*) FROM ${table}) AS total, coalesce(sum(g.n - 1), 0) AS duplicates, count(*) AS groups FROM (${grouped}) AS g`,
    [],
  )
  const rows =
    limit === 0
      ? []
      : await dialect.read(client, `${grouped} ORDER BY n DESC, ${columns.map((_, i) => `c${i}`).join(', ')} LIMIT ${dialect.placeholder(1)}`, [limit])

  const s = summary as { total: unknown; duplicates: unknown; groups: unknown }
  const totalRows = Number(s.total)
  const duplicateRows = Number(s.duplicates)
  const duplicateRate = totalRows === 0 ? 0 : duplicateRows / totalRows
  const exceeded = duplicateRate > threshold
  if (events.listening) {
    events.emit({ type: 'reconcile', table: options.table, columns: [...options.columns], totalRows, duplicateRows, duplicateRate, threshold, exceeded })
  }
  return {
    table: options.table,
    columns: [...options.columns],
    totalRows,
    duplicateRows,
    groupCount: Number(s.groups),
    duplicateRate,
    threshold,
    exceeded,
    groups: rows.map((row) => {
      const r = row as Record<string, unknown>
      const values: Record<string, unknown> = {}
      options.columns.forEach((name, i) => (values[name] = r[`c${i}`]))
      return { values, rows: Number(r.n) }
    }),
  }
}
