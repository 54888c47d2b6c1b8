import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'
import { Mutex } from '../../key-gate.js'
import { inTransaction } from './connection.js'
import type { SqliteDatabase } from '../../../ports/sql-clients.js'

const writers = new WeakMap<SqliteDatabase, Mutex>()

/**
 * The one queue for write transactions on a connection, shared by everything in idem
 * that writes through it (transactional and leased stores, the outbox dispatcher).
 * An SQLite connection has one transaction at a time, and an engine call keeps its
 * transaction open while its function awaits: anything else that began on the
 * connection meanwhile would fail or fold into that transaction. Taking turns in one
 * FIFO queue also means none of them starves: polling for a moment when no transaction
 * is open found none under steady traffic (measured: a dispatcher gave up after 20 s
 * while eight callers kept the engine busy).
 */
function connectionWriter(db: SqliteDatabase): Mutex {
  let writer = writers.get(db)
  if (writer === undefined) writers.set(db, (writer = new Mutex()))
  return writer
}

/**
 * Takes the connection's turn for a short synchronous transaction: waits in the queue,
 * then for any transaction the app opened itself outside it (a `BEGIN` of its own), so
 * the work never folds into someone else's transaction.
 * @returns the function that hands the turn on (call it once)
 * @throws StoreUnavailableError when the turn has not come within `timeoutMs`
 */
export async function takeTurn(db: SqliteDatabase, timeoutMs: number, who: string): Promise<() => void> {
  const deadline = Date.now() + timeoutMs
  const release = await connectionWriter(db).acquire(timeoutMs)
  if (release === undefined) throw new StoreUnavailableError(`${who}: SQLite's writer stayed busy for ${timeoutMs} ms`)
  try {
    // Throws once the connection is closed (node:sqlite, bun:sqlite): the turn is handed on all the same.
    while (inTransaction(db)) {
      if (Date.now() >= deadline) {
        throw new StoreUnavailableError(`${who}: a transaction opened outside idem stayed open on the SQLite connection for ${timeoutMs} ms`)
      }
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  } catch (error) {
    release()
    throw error
  }
  return release
}

/**
 * Runs synchronous `work` in the connection's turn: in a `BEGIN IMMEDIATE` transaction
 * of its own (rolled back if `work` throws), or, with `transaction: false`, as it is
 * (one statement is atomic by itself).
 * @throws StoreUnavailableError when the turn has not come within `timeoutMs`; else what `work` threw
 */
export async function inTurn<T>(db: SqliteDatabase, timeoutMs: number, who: string, work: () => T, transaction = true): Promise<T> {
  const release = await takeTurn(db, timeoutMs, who)
  try {
    if (!transaction) return work()
    db.exec('BEGIN IMMEDIATE')
    try {
      const value = work()
      db.exec('COMMIT')
      return value
    } catch (error) {
      if (inTransaction(db)) db.exec('ROLLBACK')
      throw error
    }
  } finally {
    release()
  }
}
