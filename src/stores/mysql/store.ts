import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { MIN_MAX_OUTCOME_BYTES } from '../../ports/key-store.js'
import { assertCount, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { KeyStore } from '../../ports/key-store.js'
import type { WithDeadLetterTable } from '../../ports/dead-letter-table.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'
import type { WithOnceTable } from '../../ports/once-table.js'
import type { WithOutboxTable } from '../../ports/outbox-table.js'
import { inboxTable } from '../sql/inbox.js'
import { keySessions } from '../sql/key-sessions.js'
import { migrationPlan, type MigrateResult } from '../sql/migrations.js'
import { pruneInBatches, type PruneOptions } from '../sql/prune.js'
import { deadLetterTable, onceTable, outboxTable } from '../sql/tables.js'
import { mysqlStoreDialect, pruneWalks } from './dialect/index.js'
import { isExecutor, mysqlDriver } from './driver/store-driver.js'
import type { MysqlExecutor, MysqlPool } from './driver/types.js'


/** What `mysqlStore` takes: the pool, and the largest outcome it stores. */
export interface MysqlStoreOptions {
  /**
   * A `mysql2/promise` pool (`mysql.createPool({ uri, charset: 'utf8mb4' })`), on the
   * database holding idem's tables; sessions take a connection from it.
   */
  pool: MysqlPool
  /**
   * The largest outcome stored, in UTF-8 bytes. An outcome travels to the server inside
   * one statement, escaped, and back inside one row, so the server's
   * `max_allowed_packet` must exceed twice this (MariaDB's default is 16 MiB, MySQL 8's
   * 64 MiB). @default 4 MiB
   */
  maxOutcomeBytes?: number
}

/**
 * Every table idem keeps in one MySQL or MariaDB database, behind the ports its front
 * ends use: the engine's keys (`KeyStore`: `idem_keys`), the inbox (ids as keys of scope
 * `inbox:<consumer>`, failure counts, dead letters), the outbox, dead letters and `once`.
 */
export interface MysqlStore
  extends KeyStore<MysqlExecutor>,
    WithInboxTable<MysqlExecutor>,
    WithOutboxTable<MysqlExecutor>,
    WithDeadLetterTable,
    WithOnceTable<MysqlExecutor> {
  /** Creates or upgrades idem's tables and routines in the pool's database. Safe to run from several instances at once (they take turns on a named lock). */
  migrate(): Promise<MigrateResult>
  /**
   * Deletes expired records (keys and inbox ids), and with `deliveredOutboxOlderThanMs`
   * old delivered outbox rows, in batches of `batchSize`, each its own short transaction.
   * @returns how many rows were deleted
   */
  prune(options?: PruneOptions): Promise<number>
}

const OPTIONS = optionNames<MysqlStoreOptions>({ pool: true, maxOutcomeBytes: true })
const DEFAULT_MAX_OUTCOME_BYTES = 4 * 1024 * 1024

/**
 * The transactional MySQL / MariaDB store (InnoDB, through `mysql2/promise`). A fresh
 * call's key is claimed in the transaction the function writes through: the claim
 * (`CALL idem_keys_open`, which also starts the transaction; `CALL idem_keys_claim` in
 * a transaction of yours) inserts the key's row or locks the one there, so a concurrent
 * duplicate waits on InnoDB's row lock until the first commits, then replays; the
 * record replaces the row before COMMIT (`CALL idem_keys_record`, with the COMMIT: three
 * round trips with the function's). A crash before COMMIT rolls back the effect and the
 * key together. A retry of a key this store recorded is one read outside any
 * transaction. Deadlocks and lock waits that run out are `StoreUnavailableError` (503,
 * retry); so is a lost connection.
 *
 * @example
 * import mysql from 'mysql2/promise'
 * const pool = mysql.createPool({ uri: process.env.DATABASE_URL, charset: 'utf8mb4', connectTimeout: 5_000 })
 * const store = mysqlStore({ pool })
 * await store.migrate()
 * const idem = createIdem({ store })
 * await idem.run({ scope, key, input }, async (tx) => { await tx.query('INSERT INTO orders (id) VALUES (?)', [id]) })
 * @see docs/mysql.md
 */
export function mysqlStore(options: MysqlStoreOptions): MysqlStore {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('mysqlStore: pass { pool }')
  assertKnownOptions('mysqlStore', options, OPTIONS)
  const { pool, maxOutcomeBytes = DEFAULT_MAX_OUTCOME_BYTES } = options
  if (!isExecutor(pool) || typeof (pool as Partial<MysqlPool>).getConnection !== 'function') {
    throw new InvalidOptionError('mysqlStore: option "pool" must be a mysql2/promise pool (mysql.createPool(…) from "mysql2/promise")')
  }
  assertCount('mysqlStore: option "maxOutcomeBytes"', maxOutcomeBytes, MIN_MAX_OUTCOME_BYTES, 512 * 1024 * 1024)
  const dialect = mysqlStoreDialect
  const driver = mysqlDriver(pool)
  return {
    name: 'mysql',
    maxOutcomeBytes,
    begin: keySessions(dialect.keys, driver).begin,
    inbox: inboxTable(dialect.inbox, driver),
    outbox: outboxTable(dialect.outbox, driver),
    deadLetters: deadLetterTable(dialect.deadLetters, driver),
    once: onceTable(dialect.once, driver),
    migrate: async () => driver.migrate(migrationPlan(dialect.migrations, 'the MySQL database')),
    prune: (options) => pruneInBatches(driver, pruneWalks, options),
  }
}
