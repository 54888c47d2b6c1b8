import type { InboxRows } from '../inbox-over-keys.js'
import { firstRow } from './connection.js'
import { classifySqliteError, guard, statement } from './errors.js'
import * as sql from './sql.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'
import { inTurn } from './writer.js'

/**
 * The inbox's own rows on SQLite: failure counts (`idem_inbox_attempts`) and dead
 * letters, in the session's transaction; a failure is counted in a statement of its
 * own, in the connection's turn, so it never folds into another call's open transaction.
 */
export function sqliteInboxRows(db: SqliteDatabase, busyTimeoutMs: number): InboxRows<SqliteDatabase> {
  return {
    async takeFailures(tx, consumer, key) {
      const row = guard(() => firstRow<{ attempts: number; last_error: string; first_failed_at: number }>(statement(tx, sql.inboxAttemptTake), consumer, key))
      return row && { attempts: row.attempts, lastError: row.last_error, firstFailedAt: new Date(row.first_failed_at) }
    },
    async deadLetter(tx, consumer, key, letter) {
      const now = Date.now()
      guard(() => statement(tx, sql.deadLetterInsert).run('inbox', consumer, key, letter.payload, letter.attempts, letter.error, letter.firstSeenAt?.getTime() ?? now, now))
    },
    async recordFailure(consumer, key, error) {
      try {
        return await inTurn(db, busyTimeoutMs, 'sqliteStore (busyTimeoutMs)', () => {
          const now = Date.now()
          return firstRow<{ attempts: number }>(statement(db, sql.inboxAttemptRecord), consumer, key, error, now, now)!.attempts
        }, false)
      } catch (cause) {
        throw classifySqliteError(cause)
      }
    },
  }
}
