import type { ClaimedRow } from '../ports/outbox-table.js'

/** An `idem_outbox` row as the SQL stores read it: Postgres gives a text id and a Date, SQLite an integer id and epoch milliseconds. */
export interface OutboxRowColumns {
  id: string | number
  topic: string
  dedupe_key: string
  payload: string
  attempts: number
  last_error: string | null
  created_at: Date | number
}

/** A claimed outbox row, as the dispatcher takes it, from its columns: the one mapping of both SQL stores. */
export function claimedOutboxRow(row: OutboxRowColumns): ClaimedRow {
  return {
    id: String(row.id),
    topic: row.topic,
    dedupeKey: row.dedupe_key,
    payload: JSON.parse(row.payload),
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: row.created_at instanceof Date ? row.created_at : new Date(row.created_at),
  }
}
