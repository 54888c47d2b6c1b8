import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { StoreOperator } from '../../ports/operator.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'
import { migrationOperator } from '../sql/migrations.js'
import { operatorReads, sqlUninstall } from '../sql/operator.js'
import { sqliteDialect } from './dialect/data-dialect.js'
import { migrationStatements } from './dialect/migrations.js'
import { operatorStatements } from './dialect/operator.js'
import { assertSqliteDatabase } from './driver/connection.js'
import { sqliteDriver } from './driver/store-driver.js'
import { leasedSqliteStore } from './leased.js'
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
 * its versioned migrations, and its SQL dialect on the database. What `idem stats|inspect|prune|migrate|reconcile --sqlite` run.
 * `inspect` and `stats` only read, so a database opened read-only serves them.
 * @example
 * const operator = sqliteOperator({ db: await openSqlite('app.db') })
 * console.log(await operator.inspect('acct_1', 'order-42'))
 */
export function sqliteOperator(options: SqliteOperatorOptions): StoreOperator & Required<Pick<StoreOperator, 'stats' | 'expiredCount' | 'prune' | 'migrations' | 'sql' | 'uninstall'>> {
  assertKnownOptions('sqliteOperator', options, OPTIONS)
  const { db } = options
  assertSqliteDatabase(db, 'sqliteOperator')
  // Reads take no turn, and the driver sets nothing on the connection: a read-only database serves them.
  const driver = sqliteDriver(db, { ms: 5_000, who: 'sqliteOperator' })
  const reads = operatorReads(operatorStatements, driver)
  return {
    backend: 'SQLite',
    inspect: reads.inspect,
    stats: reads.stats,
    expiredCount: reads.expiredCount,
    async prune(prune = {}) {
      // The stores are made only now: they set the connection's busy timeout, and the
      // leased one's statements need the leased tables, which older schemas lack.
      const deleted = await sqliteStore({ db }).prune(prune)
      const { batchSize, onBatch } = prune
      return deleted + (await leasedSqliteStore({ db }).prune({ ...(batchSize === undefined ? {} : { batchSize }), ...(onBatch === undefined ? {} : { onBatch }) }))
    },
    sql: { dialect: sqliteDialect, client: db },
    migrations: { ...migrationOperator(migrationStatements, driver, reads.tables), migrate: async () => sqliteStore({ db }).migrate() },
    uninstall: sqlUninstall(operatorStatements, driver),
  }
}
