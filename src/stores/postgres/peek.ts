import type { KeyPeek } from '../../ports/key-peek.js'
import type { KeyRecord } from '../../ports/key-store.js'
import { classifyPgError } from './driver/errors.js'
import { checkOut } from './driver/held-client.js'
import * as sql from './dialect/index.js'
import type { PgPool } from './driver/types.js'
import { inlined, resultsOf } from './driver/wire.js'

/**
 * What the transactional store holds for a key, without claiming it, in one round trip:
 * BEGIN, a try of the key's lock, the record (read after the try, in a snapshot of its
 * own), COMMIT. For a dual-read window (core/dual-read.ts) with this store as `previous`.
 */
export function postgresPeek(pool: PgPool, schema: string, table: sql.KeyPeekStatements): KeyPeek['peek'] {
  return async (scope, key) => {
    const client = await checkOut(pool, schema)
    let failure: unknown
    try {
      const results = resultsOf(await client.query(`BEGIN; ${inlined(table.tryLock(scope, key))}; ${inlined(table.lookup(scope, key))}; COMMIT`))
      const free = (results[1]!.rows[0] as { free: boolean }).free
      const record = results[2]!.rows[0] as KeyRecord | undefined
      if (record !== undefined) return { state: 'completed', record: { fingerprint: record.fingerprint, outcome: record.outcome } }
      return free ? { state: 'absent' } : { state: 'held' }
    } catch (error) {
      failure = client.lost ?? (await client.query('ROLLBACK').then(() => undefined, (e: unknown) => e))
      throw classifyPgError(error, schema)
    } finally {
      client.release(failure)
    }
  }
}
