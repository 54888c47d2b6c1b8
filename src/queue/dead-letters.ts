import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { classifyPgError } from '../stores/postgres/errors.js'
import * as pgSql from '../stores/postgres/sql.js'
import * as sqliteSql from '../stores/sqlite/sql.js'
import { assertCount } from '../core/validate.js'
import { missingTable } from './outbox.js'
import { isPg, isSqlite, type PgQueryable, type SqliteDatabase } from './types.js'

/** One row of idem_dead_letters. */
export interface DeadLetterRow {
  id: string
  /** `inbox` (a consumed message) or `outbox` (an effect that could not be delivered). */
  source: 'inbox' | 'outbox'
  /** The consumer (inbox) or the topic (outbox). */
  name: string
  /** The inbox key or the outbox dedupe key. */
  messageKey: string
  payload: unknown
  attempts: number
  lastError: string
  firstSeenAt: Date
  deadAt: Date
}

export interface ListDeadLettersOptions {
  source: 'inbox' | 'outbox'
  /** Only this consumer or topic. */
  name?: string
  /** @default 100 */
  limit?: number
  /** Postgres schema. @default 'public' */
  schema?: string
}

/**
 * Reads dead letters, newest first, for an operator or an alert.
 * @example const letters = await listDeadLetters(pool, { source: 'inbox', name: 'claims-intake' })
 */
export async function listDeadLetters(db: PgQueryable | SqliteDatabase, { source, name, limit = 100, schema = 'public' }: ListDeadLettersOptions): Promise<DeadLetterRow[]> {
  if (source !== 'inbox' && source !== 'outbox') throw new InvalidOptionError('listDeadLetters: option "source" must be "inbox" or "outbox"')
  assertCount('listDeadLetters: option "limit"', limit, 1, 100_000)
  type Raw = { id: unknown; source: 'inbox' | 'outbox'; name: string; message_key: string; payload: string | null; attempts: number; last_error: string; first_seen_at: Date | number; dead_at: Date | number }
  let rows: Raw[]
  if (isSqlite(db)) {
    try {
      rows = db.prepare(sqliteSql.deadLetterList).all(source, name ?? null, name ?? null, limit) as Raw[]
    } catch (error) {
      throw missingTable(error)
    }
  } else if (isPg(db)) {
    const statement = pgSql.deadLetterList(schema, source, name ?? null, limit)
    try {
      rows = (await db.query(statement.text, statement.values)).rows as Raw[]
    } catch (error) {
      throw classifyPgError(error, schema)
    }
  } else {
    throw new InvalidOptionError('listDeadLetters: pass a pg pool/client or a better-sqlite3 Database')
  }
  return rows.map((row) => ({
    id: String(row.id),
    source: row.source,
    name: row.name,
    messageKey: row.message_key,
    payload: row.payload === null ? null : JSON.parse(row.payload),
    attempts: row.attempts,
    lastError: row.last_error,
    firstSeenAt: new Date(row.first_seen_at),
    deadAt: new Date(row.dead_at),
  }))
}
