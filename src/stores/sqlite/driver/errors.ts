import { IdemError } from '../../../core/errors/idem-error.js'
import { MigrationRequiredError } from '../../../core/errors/migration-required.js'
import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'

// The database cannot serve now (busy, locked, failing, full, read-only, damaged), whatever
// the statement: SQLite's primary result codes, their numbers and their messages.
// better-sqlite3 and bun:sqlite give the name as `code` (SQLITE_BUSY, or an extended
// SQLITE_BUSY_SNAPSHOT), node:sqlite the number as `errcode` (extended ones carry the
// primary in their low byte), and Deno's node:sqlite `exec` only SQLite's message.
const UNAVAILABLE: ReadonlyArray<readonly [name: string, code: number, message: string]> = [
  ['SQLITE_BUSY', 5, 'database is locked'],
  ['SQLITE_LOCKED', 6, 'database table is locked'],
  ['SQLITE_READONLY', 8, 'attempt to write a readonly database'],
  ['SQLITE_IOERR', 10, 'disk I/O error'],
  ['SQLITE_CORRUPT', 11, 'database disk image is malformed'],
  ['SQLITE_FULL', 13, 'database or disk is full'],
  ['SQLITE_CANTOPEN', 14, 'unable to open database file'],
  ['SQLITE_PROTOCOL', 15, 'locking protocol'],
  ['SQLITE_NOTADB', 26, 'file is not a database'],
]

// A closed connection, as better-sqlite3 ("The database connection is not open"),
// node:sqlite (its database, or a statement finalized with it) and bun:sqlite say it.
const CLOSED = /database connection is not open|^database is not open$|^statement has been finalized$|^Cannot use a closed database$|^Database has closed$/

/** The name of the unavailable condition `error` reports, if it reports one. */
function unavailableCode(error: Error): string | undefined {
  const { code, errcode } = error as { code?: unknown; errcode?: unknown }
  if (typeof code === 'string' && code.startsWith('SQLITE_')) {
    // Extended codes (SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT) count as their primary code.
    const primary = code.split('_').slice(0, 2).join('_')
    return UNAVAILABLE.some(([name]) => name === primary) ? code : undefined
  }
  if (typeof errcode === 'number') return UNAVAILABLE.find(([, number]) => number === (errcode & 0xff))?.[0]
  return UNAVAILABLE.find(([, , message]) => error.message === message)?.[0]
}

/**
 * Maps an SQLite driver's error from one of idem's own statements to idem's typed errors:
 * a missing idem table is `MigrationRequiredError`, a closed connection or a busy,
 * locked, failing or full database is `StoreUnavailableError`; anything else (a bug,
 * or the caller's own error) passes unchanged. idem's own errors pass unchanged too.
 */
export function classifySqliteError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof IdemError) return error
  if (/no such table: idem_/.test(error.message)) {
    return new MigrationRequiredError(
      `idem's SQLite tables are missing (${error.message}). Run the migration: \`store.migrate()\` or \`npx idem migrate --sqlite <file>\``,
      { cause: error },
    )
  }
  if (CLOSED.test(error.message)) return new StoreUnavailableError(`SQLite is unavailable: ${error.message}`, { cause: error })
  const code = unavailableCode(error)
  if (code !== undefined) return new StoreUnavailableError(`SQLite is unavailable: ${error.message} (${code})`, { cause: error })
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
