import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { MigrationRequiredError } from '../core/errors/migration-required.js'
import { classifyPgError } from '../stores/postgres/errors.js'
import * as pgSql from '../stores/postgres/sql.js'
import * as sqliteSql from '../stores/sqlite/sql.js'
import type { SqliteStatement } from '../stores/sqlite/types.js'
import type { PgQueryable, SqliteDatabase } from './types.js'

/** What a gate is about: stored as text, so `42`, `42n` and `'42'` are the same subject. */
export type OnceSubject = string | number | bigint

export interface OnceOptions {
  /** Postgres: the schema holding `idem_once` (where the store was migrated). @default 'public' */
  schema?: string
}

const MAX_KIND_LENGTH = 200
const MAX_SUBJECT_LENGTH = 1024

/**
 * A first-time gate for a side effect, such as "send the claim-received email for claim
 * 42": returns true the first time `(kind, subject)` is seen and false ever after. The
 * mark is a row in `idem_once`, inserted in the caller's transaction, so it commits
 * with the caller's other writes and a rollback forgets it (the next attempt gets true
 * again). A concurrent transaction asking for the same pair waits until the first one
 * commits (then gets false) or rolls back (then gets true). Needs the store's migration
 * (version 2).
 *
 * With better-sqlite3 it is synchronous, so it fits in `db.transaction(...)`, and it
 * refuses to run outside a transaction. With pg, pass the client of your open
 * transaction; on a pool or a client in autocommit the mark commits at once, on its own.
 *
 * Marks are kept until you delete them.
 *
 * @throws InvalidOptionError for a malformed kind or subject, or (SQLite) no open transaction
 * @throws MigrationRequiredError when `idem_once` does not exist
 * @example
 * await client.query('BEGIN')
 * if (await once(client, 'claim-received-email', claimId)) await outbox.enqueue(client, email)
 * await client.query('COMMIT')
 * @example
 * db.transaction(() => { if (once(db, 'claim-received-email', claimId)) queueEmail(db) })()
 * @see docs/data.md
 */
export function once(tx: SqliteDatabase, kind: string, subject: OnceSubject): boolean
export function once(tx: PgQueryable, kind: string, subject: OnceSubject, options?: OnceOptions): Promise<boolean>
export function once(
  tx: SqliteDatabase | PgQueryable,
  kind: string,
  subject: OnceSubject,
  options: OnceOptions = {},
): boolean | Promise<boolean> {
  assertKind(kind)
  const text = subjectText(subject)
  if (tx !== null && typeof tx === 'object' && typeof (tx as SqliteDatabase).prepare === 'function') {
    return onceSqlite(tx as SqliteDatabase, kind, text)
  }
  if (tx !== null && typeof tx === 'object' && typeof (tx as PgQueryable).query === 'function') {
    return oncePostgres(tx as PgQueryable, kind, text, options.schema ?? 'public')
  }
  throw new InvalidOptionError('once: "tx" must be a pg client in a transaction or a better-sqlite3 Database')
}

async function oncePostgres(client: PgQueryable, kind: string, subject: string, schema: string): Promise<boolean> {
  let statement: pgSql.Statement
  try {
    statement = pgSql.onceInsert(schema, kind, subject)
  } catch (cause) {
    throw new InvalidOptionError(`once: option "schema": ${(cause as Error).message}`, { cause })
  }
  try {
    const result = await client.query(statement.text, statement.values)
    return result.rowCount === 1
  } catch (error) {
    throw classifyPgError(error, schema)
  }
}

// Prepared once per database: a gate sits on hot paths.
const prepared = new WeakMap<SqliteDatabase, SqliteStatement>()

function onceSqlite(db: SqliteDatabase, kind: string, subject: string): boolean {
  if (!db.inTransaction) {
    throw new InvalidOptionError(
      'once: "tx" is a Database with no open transaction; call once inside db.transaction(...) so the mark commits with the side effect',
    )
  }
  try {
    let statement = prepared.get(db)
    if (statement === undefined) prepared.set(db, (statement = db.prepare(sqliteSql.onceInsert)))
    return statement.run(kind, subject, Date.now()).changes === 1
  } catch (error) {
    if (error instanceof Error && /no such table: idem_once/.test(error.message)) {
      throw new MigrationRequiredError(
        `idem's SQLite table idem_once is missing (${error.message}). Run the migration: \`sqliteStore({ db }).migrate()\``,
        { cause: error },
      )
    }
    throw error
  }
}

function assertKind(kind: unknown): asserts kind is string {
  if (typeof kind !== 'string' || kind.length === 0 || kind.length > MAX_KIND_LENGTH || kind.includes('\0')) {
    throw new InvalidOptionError(`once: "kind" must be 1–${MAX_KIND_LENGTH} characters without NUL, got ${JSON.stringify(kind)}`)
  }
}

function subjectText(subject: unknown): string {
  let text: string | undefined
  if (typeof subject === 'string') text = subject
  else if (typeof subject === 'bigint') text = subject.toString(10)
  else if (typeof subject === 'number' && Number.isSafeInteger(subject)) text = String(subject)
  if (text === undefined || text.length === 0 || text.length > MAX_SUBJECT_LENGTH || text.includes('\0')) {
    throw new InvalidOptionError(
      `once: "subject" must be a string of 1–${MAX_SUBJECT_LENGTH} characters without NUL, a safe integer or a bigint, got ${
        typeof subject === 'bigint' ? `${subject}n` : JSON.stringify(subject) ?? typeof subject
      }`,
    )
  }
  return text
}
