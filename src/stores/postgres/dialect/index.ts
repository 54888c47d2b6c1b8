/**
 * Every SQL statement the Postgres stores run, as pure functions of the schema name,
 * one file per table family: keys (`idem_keys`, `idem_keys_by_day`, and the claim
 * function of both), the inbox (`idem_inbox`, `idem_inbox_attempts`), the outbox, dead
 * letters, `once`, leases and steps, pruning, the operator's reads; `postgresStoreDialect`
 * gathers them as the SQL stores' protocol takes them (src/stores/sql/dialect.ts).
 * The tables themselves are created by migrations.ts; data-dialect.ts is the dialect
 * `idem/data`'s helpers write in. The store's files one folder up put the protocol
 * over these statements and the driver (../driver/).
 */
export * from './statement.js'
export * from './keys.js'
export * from './key-claim.js'
export * from './inbox.js'
export * from './outbox.js'
export * from './dead-letters.js'
export * from './once.js'
export * from './leases.js'
export * from './prune.js'
export * from './partitions.js'
export * from './operator.js'
export * from './store-dialect.js'
