import type { PruneWalk } from '../../sql/dialect.js'
import { deletesUpTo } from '../../sql/prune.js'
import type { Row } from '../../sql/statement.js'
import { outboxStatements } from './queue.js'

/**
 * The end of one pruning window: the `limit`-th record after `(scope, key)` in key
 * order, none when fewer are left. There is no index on expiry (it would cost every
 * insert), so pruning walks the table in windows, each a short transaction of bounded work.
 */
export const pruneWindowEnd = 'SELECT scope, key FROM idem_keys WHERE (scope, key) > (?, ?) ORDER BY scope, key LIMIT 1 OFFSET ?'

/** Deletes the expired records of the window of `limit` records after `(scope, key)`. Parameters: scope, key, limit, now. */
export const pruneWindow =
  'DELETE FROM idem_keys WHERE (scope, key) IN (SELECT scope, key FROM idem_keys WHERE (scope, key) > (?, ?) ORDER BY scope, key LIMIT ?) AND expires_at <= ?'

/**
 * What a prune walks, in order: when asked, the outbox rows delivered more than
 * `deliveredOutboxOlderThanMs` ago, then `idem_keys` (keys and inbox ids) window by
 * window: each batch reads where its window ends before deleting in it, so the next
 * starts after the last record it examined.
 */
export function pruneWalks(batchSize: number, deliveredOutboxOlderThanMs: number | undefined): PruneWalk[] {
  const keys: PruneWalk = {
    batch: (after, now) => {
      const from = [String(after?.scope ?? ''), String(after?.key ?? '')]
      return [
        { text: pruneWindowEnd, values: [...from, batchSize - 1] },
        { text: pruneWindow, values: [...from, batchSize, now] },
      ]
    },
    read: ([end, deleted]) => {
      const last = end?.rows[0] as Row | undefined
      return { deleted: deleted?.rowCount ?? 0, more: last !== undefined, ...(last === undefined ? {} : { after: last }) }
    },
  }
  if (deliveredOutboxOlderThanMs === undefined) return [keys]
  return [deletesUpTo(batchSize, (now) => outboxStatements.prune(deliveredOutboxOlderThanMs, batchSize, now)), keys]
}
