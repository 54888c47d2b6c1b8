import { classifyPgError } from './errors.js'
import { checkOut } from './held-client.js'
import * as sql from '../dialect/index.js'
import type { PgPool, PgQueryResult } from './types.js'

/**
 * Runs one statement on a client of its own from the pool (its own transaction), and
 * returns its result. A client whose connection failed is destroyed rather than reused.
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
