import type { OnceTable } from '../../ports/once-table.js'
import { classifyPgError } from './driver/errors.js'
import { assertExecutor } from './driver/executors.js'
import * as sql from './dialect/index.js'
import type { PgExecutor } from './driver/types.js'

/**
 * `once`'s table on Postgres (`idem_once`): the mark is an INSERT … ON CONFLICT DO
 * NOTHING in the caller's transaction, so a concurrent one waits on the row's lock.
 */
export function postgresOnceTable(schema: string): OnceTable<PgExecutor> {
  return {
    async mark(tx, kind, subject) {
      assertExecutor('once: "tx"', tx)
      const statement = sql.onceInsert(schema, kind, subject)
      try {
        return (await tx.query(statement.text, statement.values)).rowCount === 1
      } catch (error) {
        throw classifyPgError(error, schema)
      }
    },
  }
}
