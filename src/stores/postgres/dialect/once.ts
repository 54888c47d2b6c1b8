import type { OnceStatements } from '../../sql/dialect.js'
import { quoteSchema, type Statement } from './statement.js'

// ---- idem_once (migration 2) ----

/**
 * Records `(kind, subject)` unless it is already there: one row affected means this is
 * the first time. Run in the caller's transaction, so a rollback forgets it; a
 * concurrent transaction inserting the same pair waits for this one to end.
 */
export function onceInsert(schema: string, kind: string, subject: string): Statement {
  return {
    text: `INSERT INTO ${quoteSchema(schema)}.idem_once (kind, subject) VALUES ($1, $2) ON CONFLICT (kind, subject) DO NOTHING`,
    values: [kind, subject],
  }
}


/** `once`'s statement for the protocol. */
export function onceStatements(schema: string): OnceStatements {
  return { mark: (kind, subject) => onceInsert(schema, kind, subject) }
}
