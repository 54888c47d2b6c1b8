import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames, type KnownOptions } from '../../core/errors/option-checks.js'
import type { PruneWalk } from './dialect.js'
import type { StoreDriver } from './driver.js'
import type { Statement } from './statement.js'

/** What a SQL store's `prune` takes. */
export interface PruneOptions {
  /** Rows deleted (or, where a table is walked, examined) per transaction. @default 1000 */
  batchSize?: number
  /**
   * Also delete outbox rows delivered more than this long ago. Delivered rows are kept
   * so that adding the same `(topic, dedupeKey)` again stays a no-op: keep them at
   * least as long as a producer may repeat an effect. @default kept
   */
  deliveredOutboxOlderThanMs?: number
  /** Called after each batch with how many rows it deleted: progress for a long prune. */
  onBatch?: (deleted: number) => void
}

/** Every option of `PruneOptions`; a store without an outbox takes `LEASED_PRUNE_OPTIONS`. */
export const PRUNE_OPTIONS = optionNames<PruneOptions>({ batchSize: true, deliveredOutboxOlderThanMs: true, onBatch: true })
/** The options of a leased store's `prune`, which has no outbox rows to delete. */
export const LEASED_PRUNE_OPTIONS = optionNames<Omit<PruneOptions, 'deliveredOutboxOlderThanMs'>>({ batchSize: true, onBatch: true })

/**
 * Deletes expired rows in batches, each batch its own short transaction (so calls
 * interleave with pruning), walking each of `walksOf`'s tables until it says none are
 * left: what every SQL store's `prune` does, the tables and their batches the dialect's.
 * @param walksOf the walks, in order, for the checked batch size and outbox age
 * @param known the options the store's `prune` takes
 * @returns how many rows were deleted
 * @throws InvalidOptionError for an option it does not take, or a bad value
 */
export async function pruneInBatches(
  driver: Pick<StoreDriver<unknown, boolean | Promise<boolean>>, 'transaction'>,
  walksOf: (batchSize: number, deliveredOutboxOlderThanMs: number | undefined) => PruneWalk[],
  options: PruneOptions = {},
  known: KnownOptions = PRUNE_OPTIONS,
): Promise<number> {
  assertKnownOptions('prune', options, known)
  const { batchSize = 1_000, deliveredOutboxOlderThanMs, onBatch } = options
  assertCount('prune: option "batchSize"', batchSize, 1)
  if (onBatch !== undefined && typeof onBatch !== 'function') throw new InvalidOptionError('prune: option "onBatch" must be a function (deleted) => void')
  if (deliveredOutboxOlderThanMs !== undefined) assertDuration('prune: option "deliveredOutboxOlderThanMs"', deliveredOutboxOlderThanMs, 0)
  let deleted = 0
  for (const walk of walksOf(batchSize, deliveredOutboxOlderThanMs)) {
    let after: Record<string, unknown> | undefined
    for (;;) {
      const batch = walk.read(await driver.transaction(walk.batch(after, Date.now())))
      deleted += batch.deleted
      onBatch?.(batch.deleted)
      if (!batch.more) break
      after = batch.after
    }
  }
  return deleted
}

/** A walk of one statement a batch, deleting at most `limit` rows: another batch follows while one deletes them all. */
export function deletesUpTo(limit: number, statement: (now: number) => Statement): PruneWalk {
  return {
    batch: (_after, now) => [statement(now)],
    read: ([result]) => {
      const deleted = result?.rowCount ?? 0
      return { deleted, more: deleted >= limit }
    },
  }
}
