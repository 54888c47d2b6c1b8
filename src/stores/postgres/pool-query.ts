import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames, type KnownOptions } from '../../core/validate.js'
import { classifyPgError } from './errors.js'
import { checkOut } from './held-client.js'
import * as sql from './sql/index.js'
import type { PgPool, PgQueryResult } from './types.js'

/**
 * Runs one statement on a client of its own from the pool (its own transaction), and
 * returns the client. A client whose connection failed is destroyed rather than reused.
 * @throws StoreUnavailableError / MigrationRequiredError as `classifyPgError` maps them
 */
export async function queryOnPool(pool: PgPool, schema: string, statement: sql.Statement): Promise<PgQueryResult> {
  const held = await checkOut(pool, schema)
  try {
    const result = await held.query(statement.text, statement.values)
    held.release()
    return result
  } catch (error) {
    held.release(error)
    throw classifyPgError(error, schema)
  }
}

/** Every option of `PruneOptions`; a store without an outbox takes `LEASED_PRUNE_OPTIONS`. */
export const PRUNE_OPTIONS = optionNames<PruneOptions>({ batchSize: true, deliveredOutboxOlderThanMs: true, onBatch: true })
/** The options of a leased store's `prune`, which has no outbox rows to delete. */
export const LEASED_PRUNE_OPTIONS = optionNames<Omit<PruneOptions, 'deliveredOutboxOlderThanMs'>>({ batchSize: true, onBatch: true })

/**
 * Deletes the expired rows of `tables` in batches of `batchSize`, each its own short
 * statement (rows locked by a running call are skipped), until none are left.
 * @param known the options the store's `prune` takes
 * @returns how many rows were deleted
 */
export async function pruneExpired(
  pool: PgPool,
  schema: string,
  tables: readonly sql.ExpiringTable[],
  options: PruneOptions = {},
  known: KnownOptions = PRUNE_OPTIONS,
): Promise<number> {
  assertKnownOptions('prune', options, known)
  const { batchSize = 1_000, deliveredOutboxOlderThanMs, onBatch } = options
  assertCount('prune: option "batchSize"', batchSize, 1)
  if (onBatch !== undefined && typeof onBatch !== 'function') throw new InvalidOptionError('prune: option "onBatch" must be a function (deleted) => void')
  if (deliveredOutboxOlderThanMs !== undefined) assertDuration('prune: option "deliveredOutboxOlderThanMs"', deliveredOutboxOlderThanMs, 0)
  const statements = tables.map((table) => () => sql.prune(schema, batchSize, table))
  if (deliveredOutboxOlderThanMs !== undefined) statements.push(() => sql.outboxPrune(schema, deliveredOutboxOlderThanMs, batchSize))
  let deleted = 0
  for (const statement of statements) {
    for (;;) {
      const { rowCount } = await queryOnPool(pool, schema, statement())
      deleted += rowCount ?? 0
      onBatch?.(rowCount ?? 0)
      if ((rowCount ?? 0) < batchSize) break
    }
  }
  return deleted
}

export interface PruneOptions {
  /** Rows deleted per statement. @default 1000 */
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
