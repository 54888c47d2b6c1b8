import type { PruneWalk } from '../../sql/dialect.js'
import { deletesUpTo } from '../../sql/prune.js'
import { outboxStatements } from './queue.js'

/**
 * Deletes up to `limit` expired records (keys and inbox ids), oldest expiry first, by the
 * index on `expires_at`. A claim in flight is never among them: its placeholder expires
 * at the end of time (claim.ts `HELD_UNTIL`). Parameters: now, limit.
 */
export const pruneKeys = 'DELETE FROM idem_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?'

/**
 * What a prune walks, in order: when asked, the outbox rows delivered more than
 * `deliveredOutboxOlderThanMs` ago, then the expired keys, a batch of `batchSize` rows
 * a transaction, until a batch deletes fewer.
 */
export function pruneWalks(batchSize: number, deliveredOutboxOlderThanMs: number | undefined): PruneWalk[] {
  const keys = deletesUpTo(batchSize, (now) => ({ text: pruneKeys, values: [now, batchSize] }))
  if (deliveredOutboxOlderThanMs === undefined) return [keys]
  return [deletesUpTo(batchSize, (now) => outboxStatements.prune(deliveredOutboxOlderThanMs, batchSize, now)), keys]
}
