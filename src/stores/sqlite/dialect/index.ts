/**
 * Every SQL statement the SQLite stores run, as constants and pure functions of their
 * arguments (times are Unix milliseconds of this process's clock), one file per table
 * family: keys and inbox ids (`idem_keys`, `idem_inbox_attempts`), the queue's tables
 * and `once`, leases and steps, pruning, the operator's reads; the versioned migrations
 * (migrations.ts), and data-dialect.ts, the dialect `idem/data`'s helpers write in.
 * `sqliteStoreDialect` gathers them as the SQL stores' protocol takes them
 * (src/stores/sql/dialect.ts). Nothing here opens a database.
 */
import type { StoreDialect } from '../../sql/dialect.js'
import { inboxStatements, keyStatements } from './keys.js'
import { migrationStatements } from './migrations.js'
import { operatorStatements } from './operator.js'
import { deadLetterStatements, onceStatements, outboxStatements } from './queue.js'

export * from './keys.js'
export * from './queue.js'
export * from './leases.js'
export * from './prune.js'
export { operatorStatements } from './operator.js'

/** SQLite as the SQL stores' protocol writes to it. */
export const sqliteStoreDialect: StoreDialect = {
  keys: keyStatements,
  inbox: inboxStatements,
  outbox: outboxStatements,
  once: onceStatements,
  deadLetters: deadLetterStatements,
  migrations: migrationStatements,
  operator: operatorStatements,
}
