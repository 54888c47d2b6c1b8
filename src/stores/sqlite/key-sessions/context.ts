import type { Claim, KeyRecord } from '../../../core/store.js'
import type { SqliteDatabase } from '../../../ports/sql-clients.js'
import type { KeyGate } from '../../key-gate.js'
import type { StoreStatements } from '../store-statements.js'

/** What a store's key sessions and its own transactions share: made once, with the store. */
export interface KeyContext {
  readonly db: SqliteDatabase
  /** How long a call waits for SQLite's single writer. */
  readonly busyTimeoutMs: number
  readonly statements: StoreStatements
  /** The keys this store's sessions hold, one call at a time each. */
  readonly gate: KeyGate
}

/** Who waits for the connection's writer, as a timeout names it. */
export const WRITER = 'sqliteStore (busyTimeoutMs)'

/**
 * Connections on which a joined call wrote its record inside a transaction that may
 * still be open (the caller's). Shared by every store in the process, like the queue.
 */
export const joinedRecordsOpen = new WeakSet<SqliteDatabase>()

// Claims that carry nothing are made once.
const NEW: Claim = { state: 'new' }
export const LOCKED: Claim = { state: 'locked' }

/** The claim of a key whose live record is `record`, or that has none. */
export function claimOf(record: KeyRecord | undefined): Claim {
  return record === undefined ? NEW : { state: 'found', record }
}
