import type { DeadLetterTable } from '../../ports/dead-letter-table.js'
import { guard, statement } from './errors.js'
import * as sql from './sql.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'

/** Dead letters on SQLite (`idem_dead_letters`). */
export function sqliteDeadLetterTable(db: SqliteDatabase): DeadLetterTable {
  return {
    async list({ source, name, limit }) {
      const rows = guard(() => statement(db, sql.deadLetterList).all(source, name, name, limit)) as Raw[]
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
    },
  }
}

interface Raw {
  id: number
  source: 'inbox' | 'outbox'
  name: string
  message_key: string
  payload: string | null
  attempts: number
  last_error: string
  first_seen_at: number
  dead_at: number
}
