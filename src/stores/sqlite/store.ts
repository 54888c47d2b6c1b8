import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../../core/validate.js'
import { KeyGate } from '../key-gate.js'
import type { KeyStore } from '../../core/store.js'
import type { WithOnceTable } from '../../ports/once-table.js'
import type { WithDeadLetterTable } from '../../ports/dead-letter-table.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'
import type { WithOutboxTable } from '../../ports/outbox-table.js'
import { inboxOverKeys } from '../inbox-over-keys.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'
import { sqliteDeadLetterTable } from './dead-letter-table.js'
import { assertSqliteDatabase, changes, firstRow, setBusyTimeout } from './connection.js'
import { forgetStatements, guard } from './errors.js'
import { sqliteInboxRows } from './inbox-rows.js'
import { sqliteOnceTable } from './once-table.js'
import { sqliteOutboxTable } from './outbox-table.js'
import { pendingSqliteMigrations, SQLITE_MIGRATIONS_TABLE, SQLITE_SCHEMA_VERSION } from './migrations.js'
import * as sql from './sql.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'
import { StoreStatements } from './store-statements.js'
import { takeTurn } from './writer.js'
import { WRITER, type KeyContext } from './key-sessions/context.js'
import { keySessions } from './key-sessions/index.js'

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
  migrate(): { from: number; to: number; applied: number[] }
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

export interface PruneOptions {
  /** Records examined per transaction. @default 1000 */
  batchSize?: number
  /**
   * Also delete outbox rows delivered more than this long ago. Delivered rows are kept
   * so that adding the same `(topic, dedupeKey)` again stays a no-op. @default kept
   */
  deliveredOutboxOlderThanMs?: number
  /** Called after each batch with how many records it deleted: progress for a long prune. */
  onBatch?: (deleted: number) => void
}

const OPTIONS = optionNames<SqliteStoreOptions>({ db: true, busyTimeoutMs: true })
const PRUNE_OPTIONS = optionNames<PruneOptions>({ batchSize: true, deliveredOutboxOlderThanMs: true, onBatch: true })

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
  const context: KeyContext = { db, busyTimeoutMs, statements: new StoreStatements(db), gate: new KeyGate() }
  const { begin } = keySessions(context)
  return {
    name: 'sqlite',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    begin,
    inbox: inboxOverKeys({ begin }, sqliteInboxRows(db, busyTimeoutMs)),
    outbox: sqliteOutboxTable(db),
    deadLetters: sqliteDeadLetterTable(db),
    once: sqliteOnceTable(),
    migrate: () => migrate(context),
    prune: (options) => prune(context, options),
    transaction: (work) => transaction(context, work),
  }
}

function migrate({ db, statements: prepared }: KeyContext): { from: number; to: number; applied: number[] } {
  return guard(() => {
    db.exec('BEGIN IMMEDIATE')
    try {
      db.exec(SQLITE_MIGRATIONS_TABLE)
      const from = firstRow<{ v: number }>(db.prepare('SELECT coalesce(max(version), 0) AS v FROM idem_migrations'))!.v
      if (from > SQLITE_SCHEMA_VERSION) {
        throw new Error(`idem: the SQLite schema is at version ${from}, newer than this idem (${SQLITE_SCHEMA_VERSION}); upgrade idem`)
      }
      const applied: number[] = []
      for (const { migration, statements } of pendingSqliteMigrations(from)) {
        for (const statement of statements) db.exec(statement)
        applied.push(migration.version)
      }
      db.exec('COMMIT')
      prepared.forgetKeys()
      forgetStatements(db)
      return { from, to: SQLITE_SCHEMA_VERSION, applied }
    } catch (error) {
      prepared.rollbackQuietly()
      throw error
    }
  })
}

async function prune(context: KeyContext, options: PruneOptions = {}): Promise<number> {
  assertKnownOptions('prune', options, PRUNE_OPTIONS)
  const { batchSize = 1_000, deliveredOutboxOlderThanMs, onBatch } = options
  assertCount('prune: option "batchSize"', batchSize, 1)
  if (onBatch !== undefined && typeof onBatch !== 'function') throw new InvalidOptionError('prune: option "onBatch" must be a function (deleted) => void')
  if (deliveredOutboxOlderThanMs !== undefined) assertDuration('prune: option "deliveredOutboxOlderThanMs"', deliveredOutboxOlderThanMs, 0)
  let outboxDeleted = 0
  if (deliveredOutboxOlderThanMs !== undefined) {
    const { db } = context
    for (;;) {
      const removed = await transaction(context, () => guard(() => changes(db.prepare(sql.outboxPrune), Date.now() - deliveredOutboxOlderThanMs, batchSize)))
      outboxDeleted += removed
      onBatch?.(removed)
      if (removed < batchSize) break
    }
  }
  return outboxDeleted + (await pruneKeys(context, batchSize, onBatch))
}

async function pruneKeys(context: KeyContext, batchSize: number, onBatch: ((deleted: number) => void) | undefined): Promise<number> {
  const { db } = context
  const window = guard(() => db.prepare(sql.pruneWindow))
  const remove = guard(() => db.prepare(sql.pruneRecord))
  let after: [string, string] = ['', '']
  let deleted = 0
  for (;;) {
    let removed = 0
    const rows = await transaction(context, () => {
      const now = Date.now()
      const found = window.all(after[0], after[1], batchSize) as { scope: string; key: string; expires_at: number }[]
      for (const row of found) if (row.expires_at <= now) removed += changes(remove, row.scope, row.key, now)
      return found
    })
    deleted += removed
    onBatch?.(removed)
    if (rows.length < batchSize) return deleted
    const last = rows[rows.length - 1]!
    after = [last.scope, last.key]
  }
}

/** The store's `transaction`: `work` in a write transaction of its own, in the connection's turn. */
async function transaction<T>({ db, busyTimeoutMs, statements }: KeyContext, work: (db: SqliteDatabase) => T | Promise<T>): Promise<T> {
  const release = await takeTurn(db, busyTimeoutMs, WRITER)
  try {
    statements.begin()
    let result: T
    try {
      result = await work(db)
    } catch (error) {
      statements.rollbackQuietly()
      throw error
    }
    statements.commit()
    return result
  } catch (error) {
    statements.rollbackQuietly()
    throw error
  } finally {
    release()
  }
}
