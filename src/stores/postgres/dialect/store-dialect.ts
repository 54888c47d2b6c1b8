import type { StoreDialect } from '../../sql/dialect.js'
import { deadLetterStatements } from './dead-letters.js'
import { inboxStatements } from './inbox.js'
import { keyStatements, type KeyLayout } from './keys.js'
import { migrationStatements } from './migrations.js'
import { onceStatements } from './once.js'
import { operatorStatements } from './operator.js'
import { outboxStatements } from './outbox.js'
import type { Isolation } from './statement.js'

/**
 * Postgres as the SQL stores' protocol writes to it (src/stores/sql/dialect.ts): every
 * statement of the transactional store on `schema`, built once with the store, for its
 * key table's layout and its transactions' isolation level.
 */
export function postgresStoreDialect(schema: string, { keyLayout, isolation }: { keyLayout: KeyLayout; isolation: Isolation }): StoreDialect {
  return {
    keys: keyStatements(schema, keyLayout, isolation),
    inbox: inboxStatements(schema, isolation),
    outbox: outboxStatements(schema),
    once: onceStatements(schema),
    deadLetters: deadLetterStatements(schema),
    migrations: migrationStatements(schema),
    operator: operatorStatements(schema),
  }
}
