export { sqliteStore, type SqliteStore, type SqliteStoreOptions } from './store.js'
export { sqliteMigrations, SQLITE_SCHEMA_VERSION, type SqliteMigration } from './migrations.js'
export type { SqliteDatabase, SqliteStatement } from '../../ports/sql-clients.js'
export { openSqlite, type OpenedSqlite } from './open.js'
/** Every SQL statement the SQLite store runs, for DBAs and tests. */
export * as sqliteSql from './sql.js'
export { sqliteOperator, type SqliteOperatorOptions } from './operator.js'
export { sqliteMigrationScript } from './operations.js'
export { leasedSqliteStore, type LeasedSqliteStore, type LeasedSqliteStoreOptions } from './leased.js'
