import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import type { SqliteDatabase, SqliteStatement } from '../../../ports/sql-clients.js'
import { classifySqliteError } from './errors.js'

/**
 * Where the three SQLite drivers the store takes differ, smoothed over in one place:
 * better-sqlite3 and bun:sqlite say `inTransaction`, node:sqlite `isTransaction`; only
 * better-sqlite3 has `pragma()`, so pragmas go through `exec`; bun:sqlite's `get` says
 * `null` where the others say `undefined`; node:sqlite may count changes as a bigint.
 */

/** Whether `db` is a database the store can run on: a statement compiler, `exec`, and a way to tell an open transaction. */
export function isSqliteDatabase(db: unknown): db is SqliteDatabase {
  const candidate = db as Partial<Record<keyof SqliteDatabase, unknown>> | null
  return (
    candidate !== null &&
    typeof candidate === 'object' &&
    typeof candidate.prepare === 'function' &&
    typeof candidate.exec === 'function' &&
    (typeof candidate.inTransaction === 'boolean' || typeof candidate.isTransaction === 'boolean')
  )
}

/**
 * Checks at creation that `db` is a database the store can run on.
 * @throws InvalidOptionError naming the option otherwise
 */
export function assertSqliteDatabase(db: unknown, who: string): asserts db is SqliteDatabase {
  if (!isSqliteDatabase(db)) {
    throw new InvalidOptionError(
      `${who}: option "db" must be an open SQLite database: a better-sqlite3 or bun:sqlite Database, or a node:sqlite DatabaseSync (Node 22.16 or later, or Deno)`,
    )
  }
}

/** Whether a transaction is open on the connection. */
export function inTransaction(db: SqliteDatabase): boolean {
  try {
    return db.inTransaction ?? db.isTransaction ?? false
  } catch (error) {
    // node:sqlite and bun:sqlite throw here once the database is closed.
    throw classifySqliteError(error)
  }
}

/** The first row `statement` returns for `params`, or undefined. */
export function firstRow<Row>(statement: SqliteStatement, ...params: unknown[]): Row | undefined {
  return (statement.get(...params) ?? undefined) as Row | undefined
}

/** How many rows a run of `statement` wrote. */
export function changes(statement: SqliteStatement, ...params: unknown[]): number {
  return Number(statement.run(...params).changes)
}

/** Sets how long SQLite itself waits for another process's write lock. */
export function setBusyTimeout(db: SqliteDatabase, ms: number): void {
  db.exec(`PRAGMA busy_timeout = ${ms}`)
}
