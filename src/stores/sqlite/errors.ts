import { IdemError } from '../../core/errors/idem-error.js'
import { MigrationRequiredError } from '../../core/errors/migration-required.js'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import type { SqliteDatabase, SqliteStatement } from './types.js'

// The database cannot serve now (busy, locked, failing, full, read-only, damaged), whatever the statement.
const UNAVAILABLE_CODES = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_CANTOPEN', 'SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_CORRUPT', 'SQLITE_NOTADB', 'SQLITE_PROTOCOL'])

/**
 * Maps a better-sqlite3 error from one of idem's own statements to idem's typed errors:
 * a missing idem table is `MigrationRequiredError`, a closed connection or a busy,
 * locked, failing or full database is `StoreUnavailableError`; anything else (a bug,
 * or the caller's own error) passes unchanged. idem's own errors pass unchanged too.
 */
export function classifySqliteError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof IdemError) return error
  const code = (error as { code?: unknown }).code
  if (/no such table: idem_/.test(error.message)) {
    return new MigrationRequiredError(
      `idem's SQLite tables are missing (${error.message}). Run the migration: \`store.migrate()\` or \`npx idem migrate --sqlite <file>\``,
      { cause: error },
    )
  }
  // Extended codes (SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT) count as their primary code.
  const primary = typeof code === 'string' ? code.split('_').slice(0, 2).join('_') : undefined
  if (error.message.includes('database connection is not open') || (primary !== undefined && UNAVAILABLE_CODES.has(primary))) {
    return new StoreUnavailableError(`SQLite is unavailable: ${error.message}${typeof code === 'string' ? ` (${code})` : ''}`, { cause: error })
  }
  return error
}

/** Runs a store statement, mapping driver errors to idem's typed errors. */
export function guard<T>(work: () => T): T {
  try {
    return work()
  } catch (error) {
    throw classifySqliteError(error)
  }
}

// Prepared once per connection and source: `prepare` parses its SQL on every call.
const cache = new WeakMap<SqliteDatabase, Map<string, SqliteStatement>>()

/**
 * The connection's prepared statement for `source`, prepared on first use. A statement
 * is bound to the schema it was prepared against, so `forget` drops them after a
 * migration.
 * @throws MigrationRequiredError when its table does not exist yet
 */
export function statement(db: SqliteDatabase, source: string): SqliteStatement {
  let statements = cache.get(db)
  if (statements === undefined) cache.set(db, (statements = new Map()))
  let prepared = statements.get(source)
  if (prepared === undefined) statements.set(source, (prepared = guard(() => db.prepare(source))))
  return prepared
}

/** Forgets the connection's prepared statements (after a migration changed its tables). */
export function forgetStatements(db: SqliteDatabase): void {
  cache.delete(db)
}
