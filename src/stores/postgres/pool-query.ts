import { assertCount } from '../../core/validate.js'
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

/**
 * Deletes the expired rows of `tables` in batches of `batchSize`, each its own short
 * statement (rows locked by a running call are skipped), until none are left.
 * @returns how many rows were deleted
 */
export async function pruneExpired(
  pool: PgPool,
  schema: string,
  tables: readonly sql.ExpiringTable[],
  { batchSize = 1_000 }: { batchSize?: number } = {},
): Promise<number> {
  assertCount('prune: option "batchSize"', batchSize, 1)
  let deleted = 0
  for (const table of tables) {
    for (;;) {
      const { rowCount } = await queryOnPool(pool, schema, sql.prune(schema, batchSize, table))
      deleted += rowCount ?? 0
      if ((rowCount ?? 0) < batchSize) break
    }
  }
  return deleted
}
