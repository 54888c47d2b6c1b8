import { assertKnownOptions, optionNames } from '../../core/validate.js'
import type { StoreOperator } from '../../ports/operator.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'
import { assertSqliteDatabase } from './connection.js'
import { leasedSqliteStore } from './leased.js'
import {
  SQLITE_SCHEMA_VERSION,
  sqliteBaseline,
  sqliteExpiredCount,
  sqliteInspect,
  sqliteMigrationScript,
  sqliteSchemaVersion,
  sqliteStats,
  sqliteUnrecordedTables,
} from './operations.js'
import { sqliteStore } from './store.js'

/** What `sqliteOperator` takes: the open database. */
export interface SqliteOperatorOptions {
  /** An open SQLite database (better-sqlite3, bun:sqlite, node:sqlite), read-only for `inspect` and `stats`. */
  db: SqliteDatabase
}

const OPTIONS = optionNames<SqliteOperatorOptions>({ db: true })

/**
 * The operator of a SQLite database: one key's records, counts and sizes, expired
 * records and their pruning (keys, inbox ids, leases; delivered outbox rows on request),
 * and its versioned migrations. What `idem stats|inspect|prune|migrate --sqlite` run.
 * `inspect` and `stats` only read, so a database opened read-only serves them.
 * @example
 * const operator = sqliteOperator({ db: openSqlite('app.db') })
 * console.log(await operator.inspect('acct_1', 'order-42'))
 */
export function sqliteOperator(options: SqliteOperatorOptions): StoreOperator & Required<Pick<StoreOperator, 'stats' | 'expiredCount' | 'prune' | 'migrations'>> {
  assertKnownOptions('sqliteOperator', options, OPTIONS)
  const { db } = options
  assertSqliteDatabase(db, 'sqliteOperator')
  return {
    backend: 'SQLite',
    inspect: async (scope, key) => sqliteInspect(db, scope, key),
    stats: async (windowMs) => sqliteStats(db, windowMs),
    expiredCount: async () => sqliteExpiredCount(db),
    async prune(prune = {}) {
      // The stores are made only now: they set the connection's busy timeout, and the
      // leased one's statements need the leased tables, which older schemas lack.
      const deleted = await sqliteStore({ db }).prune(prune)
      const { batchSize, onBatch } = prune
      return deleted + (await leasedSqliteStore({ db }).prune({ ...(batchSize === undefined ? {} : { batchSize }), ...(onBatch === undefined ? {} : { onBatch }) }))
    },
    migrations: {
      latest: SQLITE_SCHEMA_VERSION,
      current: async () => sqliteSchemaVersion(db),
      script: (from) => sqliteMigrationScript(from),
      unrecordedTables: async () => sqliteUnrecordedTables(db),
      baseline: async (version) => sqliteBaseline(db, version),
      migrate: async () => sqliteStore({ db }).migrate(),
    },
  }
}
