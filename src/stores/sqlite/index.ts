export { sqliteStore, type SqliteStore, type SqliteStoreOptions } from './store.js'
export { sqliteMigrations, sqliteMigrationScript, SQLITE_SCHEMA_VERSION, type SqliteMigration } from './dialect/migrations.js'
export type { SqliteDatabase, SqliteStatement } from '../../ports/sql-clients.js'
export { openSqlite, type OpenedSqlite } from './open.js'
/** Every SQL statement the SQLite stores run, for DBAs and tests. */
export { sqliteDialect } from './dialect/data-dialect.js'
export { sqliteOperator, type SqliteOperatorOptions } from './operator.js'
export { leasedSqliteStore, type LeasedSqliteStore, type LeasedSqliteStoreOptions } from './leased.js'
