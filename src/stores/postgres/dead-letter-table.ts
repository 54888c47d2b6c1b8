import type { DeadLetterTable } from '../../ports/dead-letter-table.js'
import { queryOnPool } from './driver/pool-query.js'
import * as sql from './dialect/index.js'
import type { PgPool } from './driver/types.js'

/** Dead letters on Postgres (`idem_dead_letters`), read on a pooled client. */
export function postgresDeadLetterTable(pool: PgPool, schema: string): DeadLetterTable {
  return {
    async list({ source, name, limit }) {
      const { rows } = await queryOnPool(pool, schema, sql.deadLetterList(schema, source, name, limit))
      return (rows as Raw[]).map((row) => ({
        id: row.id,
        source: row.source,
        name: row.name,
        messageKey: row.message_key,
        payload: row.payload === null ? null : JSON.parse(row.payload),
        attempts: row.attempts,
        lastError: row.last_error,
        firstSeenAt: row.first_seen_at,
        deadAt: row.dead_at,
      }))
    },
  }
}

interface Raw {
  id: string
  source: 'inbox' | 'outbox'
  name: string
  message_key: string
  payload: string | null
  attempts: number
  last_error: string
  first_seen_at: Date
  dead_at: Date
}
