import type { OnceTable } from '../../ports/once-table.js'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { changes, inTransaction } from './connection.js'
import { guard, statement } from './errors.js'
import * as sql from './sql.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'

/**
 * `once`'s table on SQLite (`idem_once`): synchronous, so it fits inside a transaction
 * (`db.transaction(...)` on better-sqlite3 and bun:sqlite, `store.transaction` on any), and it refuses to run outside a transaction (a mark that
 * committed alone could not roll back with the side effect).
 */
export function sqliteOnceTable(): OnceTable<SqliteDatabase, boolean> {
  return {
    mark(tx, kind, subject) {
      if (!inTransaction(tx)) {
        throw new InvalidOptionError(
          'once: "tx" is a Database with no open transaction; call once inside db.transaction(...) so the mark commits with the side effect',
        )
      }
      return guard(() => changes(statement(tx, sql.onceInsert), kind, subject, Date.now()) === 1)
    },
  }
}
