export { sqliteStore, type SqliteStore, type SqliteStoreOptions } from './store.js'
export { sqliteMigrations, SQLITE_SCHEMA_VERSION, type SqliteMigration } from './migrations.js'
export type { SqliteDatabase, SqliteStatement } from './types.js'
export * as sqliteSql from './sql.js'
