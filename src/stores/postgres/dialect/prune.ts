import type { PruneWalk } from '../../sql/dialect.js'
import { deletesUpTo } from '../../sql/prune.js'
import { outboxPrune } from './outbox.js'
import { quoteSchema, type Statement } from './statement.js'

/** The tables whose rows expire. */
export type ExpiringTable = 'idem_keys' | 'idem_inbox' | 'idem_leases' | 'idem_keys_by_day_later'

/**
 * Removes expired rows of one of idem's tables (`idem_keys`, `idem_inbox`, or
 * `idem_leases` whose steps go by cascade), at most `limit` at a time; rows locked by
 * a running call are skipped.
 */
export function prune(schema: string, limit: number, table: ExpiringTable): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `DELETE FROM ${s}.${table} WHERE ctid = ANY (ARRAY(` +
      `SELECT ctid FROM ${s}.${table} WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED))`,
    values: [limit],
  }
}

/**
 * What a prune walks, in order: each table's expired rows, then, when asked, the outbox
 * rows delivered more than `deliveredOutboxOlderThanMs` ago; every batch one statement.
 */
export function pruneWalks(schema: string, tables: readonly ExpiringTable[]): (batchSize: number, deliveredOutboxOlderThanMs: number | undefined) => PruneWalk[] {
  return (batchSize, deliveredOutboxOlderThanMs) => [
    ...tables.map((table) => deletesUpTo(batchSize, () => prune(schema, batchSize, table))),
    ...(deliveredOutboxOlderThanMs === undefined ? [] : [deletesUpTo(batchSize, () => outboxPrune(schema, deliveredOutboxOlderThanMs, batchSize))]),
  ]
}
