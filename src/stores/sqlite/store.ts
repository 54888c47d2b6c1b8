import { assertDuration, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { KeyStore } from '../../ports/key-store.js'
import type { WithOnceTable } from '../../ports/once-table.js'
import type { WithDeadLetterTable } from '../../ports/dead-letter-table.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'
import type { WithOutboxTable } from '../../ports/outbox-table.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'
import { inboxTable } from '../sql/inbox.js'
import { keySessions } from '../sql/key-sessions.js'
import { migrationPlan, type MigrateResult } from '../sql/migrations.js'
import { pruneInBatches, type PruneOptions } from '../sql/prune.js'
import { deadLetterTable, onceTable, outboxTable } from '../sql/tables.js'
import { pruneWalks, sqliteStoreDialect } from './dialect/index.js'
import { assertSqliteDatabase, setBusyTimeout } from './driver/connection.js'
import { execute } from './driver/statements.js'
import { rollbackQuietly, sqliteDriver, type Turn } from './driver/store-driver.js'
import { takeTurn } from './driver/writer.js'

export type { PruneOptions }

/** What `sqliteStore` takes: the database and how long to wait for its write lock. */
export interface SqliteStoreOptions {
  /**
   * An open SQLite database: a better-sqlite3 or bun:sqlite `Database`, or a node:sqlite
   * `DatabaseSync` (`openSqlite` opens the runtime's own). Use WAL mode
   * (`db.exec('PRAGMA journal_mode = WAL')`, as `openSqlite` does) so replays read while
   * a writer works.
   */
  db: SqliteDatabase
  /**
   * How long a call waits for SQLite's single writer (another key's transaction in
   * this process, or another process) before `StoreUnavailableError`. @default 5000
   */
  busyTimeoutMs?: number
}

/**
 * Every table idem keeps in one SQLite database, behind the ports its front ends use:
 * the engine's keys (`KeyStore`), the inbox (message ids as keys of scope
 * `inbox:<consumer>`, failure counts, dead letters), the outbox, dead letters and `once`.
 */
export interface SqliteStore
  extends KeyStore<SqliteDatabase>,
    WithInboxTable<SqliteDatabase>,
    WithOutboxTable<SqliteDatabase, boolean>,
    WithDeadLetterTable,
    WithOnceTable<SqliteDatabase, boolean> {
  /** Creates or upgrades idem's tables. */
  migrate(): MigrateResult
  /**
   * Deletes expired records, walking the table in windows of `batchSize` records, each
   * its own short write transaction, so engine calls interleave with pruning.
   * @returns how many records were deleted
   */
  prune(options?: PruneOptions): Promise<number>
  /**
   * Runs `work` in a write transaction (`BEGIN IMMEDIATE`), queued with the engine's own
   * transactions. Everything else that writes through this connection (an outbox
   * dispatcher, a job) must go through here: SQLite has one writer, and a statement run
   * on the connection while an engine call awaits would join that call's transaction.
   * Commits when `work` resolves, rolls back when it throws.
   */
  transaction<T>(work: (db: SqliteDatabase) => T | Promise<T>): Promise<T>
}

const OPTIONS = optionNames<SqliteStoreOptions>({ db: true, busyTimeoutMs: true })

/** How long a dispatcher step waits for its turn on the connection before it fails (the next round retries). */
const DISPATCHER_TURN: Turn = { ms: 20_000, who: 'idem dispatcher' }

/**
 * The transactional SQLite store (better-sqlite3, bun:sqlite or node:sqlite). SQLite has one writer per database,
 * so this store runs one transaction at a time per connection (`BEGIN IMMEDIATE`,
 * queued in process); replays are served from a plain read without joining the queue.
 * The caller's function gets the database and writes through it; every statement it
 * runs before resolving is part of the transaction.
 *
 * @example
 * const db = await openSqlite('app.db') // the runtime's own SQLite, in WAL mode
 * const store = sqliteStore({ db }); store.migrate()
 */
export function sqliteStore(options: SqliteStoreOptions): SqliteStore {
  assertKnownOptions('sqliteStore', options, OPTIONS)
  const { db, busyTimeoutMs = 5_000 } = options
  assertSqliteDatabase(db, 'sqliteStore')
  assertDuration('sqliteStore: option "busyTimeoutMs"', busyTimeoutMs, 0)
  // Cross-process writers are waited for by SQLite itself.
  setBusyTimeout(db, busyTimeoutMs)
  const turn: Turn = { ms: busyTimeoutMs, who: 'sqliteStore (busyTimeoutMs)' }
  const dialect = sqliteStoreDialect
  const driver = sqliteDriver(db, turn)
  return {
    name: 'sqlite',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    begin: keySessions(dialect.keys, driver).begin,
    inbox: inboxTable(dialect.inbox, driver),
    outbox: outboxTable(dialect.outbox, sqliteDriver(db, DISPATCHER_TURN)),
    deadLetters: deadLetterTable(dialect.deadLetters, driver),
    once: onceTable(dialect.once, driver),
    migrate: () => driver.migrate(migrationPlan(dialect.migrations, 'the SQLite schema')),
    prune: (options) => pruneInBatches(driver, pruneWalks, options),
    transaction: (work) => transaction(db, turn, work),
  }
}

/** The store's `transaction`: `work` in a write transaction of its own, in the connection's turn. */
async function transaction<T>(db: SqliteDatabase, turn: Turn, work: (db: SqliteDatabase) => T | Promise<T>): Promise<T> {
  const release = await takeTurn(db, turn.ms, turn.who)
  try {
    execute(db, 'BEGIN IMMEDIATE')
    const result = await work(db)
    execute(db, 'COMMIT')
    return result
  } catch (error) {
    // BEGIN's and COMMIT's errors are idem's typed ones already; `work`'s are its own.
    rollbackQuietly(db)
    throw error
  } finally {
    release()
  }
}
