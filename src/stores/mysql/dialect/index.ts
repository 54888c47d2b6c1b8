/**
 * Every SQL statement the MySQL store runs, as constants and pure functions of their
 * arguments (times are epoch milliseconds of this process's clock), one file per table
 * family: the claim routines (claim.ts), keys, the inbox, the outbox with dead letters
 * and `once`, pruning, the operator's reads; the versioned migrations (migrations.ts)
 * and data-dialect.ts, the dialect `idem/data`'s helpers write in. `mysqlStoreDialect`
 * gathers them as the SQL stores' protocol takes them (src/stores/sql/dialect.ts).
 * Nothing here opens a connection.
 */
import type { StoreDialect } from '../../sql/dialect.js'
import { inboxStatements } from './inbox.js'
import { keyStatements } from './keys.js'
import { migrationStatements } from './migrations.js'
import { operatorStatements } from './operator.js'
import { deadLetterStatements, onceStatements, outboxStatements } from './queue.js'

export { pruneWalks } from './prune.js'

/** MySQL and MariaDB as the SQL stores' protocol writes to them. */
export const mysqlStoreDialect: StoreDialect = {
  keys: keyStatements,
  inbox: inboxStatements,
  outbox: outboxStatements,
  once: onceStatements,
  deadLetters: deadLetterStatements,
  migrations: migrationStatements,
  operator: operatorStatements,
}
