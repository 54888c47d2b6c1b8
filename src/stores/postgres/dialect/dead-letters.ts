import type { DeadLetterStatements } from '../../sql/dialect.js'
import { quoteSchema, type Statement } from './statement.js'

// ---- idem_dead_letters (migration 3) ----

/** Records a dead letter (inbox messages; the outbox moves its rows with `outboxDeadLetter`). */
export function deadLetterInsert(
  schema: string,
  source: 'inbox' | 'outbox',
  name: string,
  messageKey: string,
  payload: string | null,
  attempts: number,
  lastError: string,
  firstSeenAt: Date | null,
): Statement {
  return {
    text:
      `INSERT INTO ${quoteSchema(schema)}.idem_dead_letters (source, name, message_key, payload, attempts, last_error, first_seen_at) ` +
      `VALUES ($1, $2, $3, $4::jsonb, $5, $6, coalesce($7::timestamptz, now()))`,
    values: [source, name, messageKey, payload, attempts, lastError, firstSeenAt],
  }
}

/** Dead letters of one source and name, newest first. */
export function deadLetterList(schema: string, source: 'inbox' | 'outbox', name: string | null, limit: number): Statement {
  return {
    text:
      `SELECT id::text AS id, source, name, message_key, payload::text AS payload, attempts, last_error, first_seen_at, dead_at ` +
      `FROM ${quoteSchema(schema)}.idem_dead_letters WHERE source = $1 AND ($2::text IS NULL OR name = $2) ORDER BY dead_at DESC, id DESC LIMIT $3`,
    values: [source, name, limit],
  }
}

/** The dead letters' statements for the protocol. */
export function deadLetterStatements(schema: string): DeadLetterStatements {
  return { list: (source, name, limit) => deadLetterList(schema, source, name, limit) }
}
