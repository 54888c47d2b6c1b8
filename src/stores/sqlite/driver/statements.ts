import type { SqliteDatabase, SqliteStatement } from '../../../ports/sql-clients.js'
import type { Result } from '../../sql/statement.js'
import { guard } from './errors.js'

/** A statement prepared on a connection, and whether it answers rows (a query, or a write with RETURNING). */
export interface Prepared {
  readonly statement: SqliteStatement
  readonly reads: boolean
}

// Prepared once per connection and text: `prepare` parses its SQL on every call.
const cache = new WeakMap<SqliteDatabase, Map<string, Prepared>>()

// idem's own statements: a read starts with SELECT or WITH, or returns rows.
const READS = /^\s*(SELECT|WITH)\b|\bRETURNING\b/i

/**
 * The connection's prepared statement for `text`, prepared on first use. A statement
 * is bound to the schema it was prepared against, so `forgetStatements` drops them
 * after a migration.
 * @throws MigrationRequiredError when its table does not exist yet
 */
export function prepared(db: SqliteDatabase, text: string): Prepared {
  let statements = cache.get(db)
  if (statements === undefined) cache.set(db, (statements = new Map()))
  let found = statements.get(text)
  if (found === undefined) statements.set(text, (found = { statement: guard(() => db.prepare(text)), reads: READS.test(text) }))
  return found
}

/** Forgets the connection's prepared statements (after a migration changed its tables). */
export function forgetStatements(db: SqliteDatabase): void {
  cache.delete(db)
}

/** Runs `text` with `values` on `db`, synchronously: the rows it answers, and how many rows it wrote (or answered). */
export function execute(db: SqliteDatabase, text: string, values: readonly unknown[] = []): Result {
  const { statement, reads } = prepared(db, text)
  return guard(() => {
    if (reads) {
      const rows = statement.all(...values)
      return { rows, rowCount: rows.length }
    }
    return { rows: NO_ROWS, rowCount: Number(statement.run(...values).changes) }
  })
}

const NO_ROWS: readonly unknown[] = []
