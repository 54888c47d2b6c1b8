import type { OutboxTable } from '../../ports/outbox-table.js'
import { claimedOutboxRow, type OutboxRowColumns } from '../outbox-rows.js'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { changes, firstRow, inTransaction } from './connection.js'
import { classifySqliteError, statement } from './errors.js'
import * as sql from './sql.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'
import { inTurn } from './writer.js'

/** How long a dispatcher step waits for its turn on the connection before it fails (the next round retries). */
const TURN_MS = 20_000

/**
 * The outbox's table on SQLite (`idem_outbox`). `add` is synchronous, so it fits in
 * a transaction, and refuses to run outside one. SQLite has one writer and its drivers
 * (better-sqlite3, bun:sqlite, node:sqlite) are synchronous, so each dispatcher step is one synchronous
 * transaction that nothing can interleave with, taken in its turn in the connection's
 * queue (`inTurn`) with the engine's transactions: it never joins one that is open (an
 * engine call awaiting its handler), and a steady stream of them never starves it.
 */
export function sqliteOutboxTable(db: SqliteDatabase): OutboxTable<SqliteDatabase, boolean> {
  const atomically = <T>(work: () => T, transaction = true): Promise<T> =>
    inTurn(db, TURN_MS, 'idem dispatcher', work, transaction).catch((error: unknown) => {
      throw classifySqliteError(error)
    })
  return {
    filtersTopics: false,
    add(tx, { topic, dedupeKey, payload, delayMs }) {
      if (!inTransaction(tx)) {
        throw new InvalidOptionError('outbox.add: "tx" is a Database with no open transaction; add inside the transaction whose writes the effect follows')
      }
      const now = Date.now()
      try {
        return changes(statement(tx, sql.outboxInsert), topic, dedupeKey, payload, now + delayMs, now) === 1
      } catch (error) {
        throw classifySqliteError(error)
      }
    },
    claim: (claimId, limit, leaseMs) =>
      atomically(() => {
        const now = Date.now()
        return (statement(db, sql.outboxClaim).all(claimId, now + leaseMs, now + leaseMs, now, limit) as OutboxRowColumns[]).map(claimedOutboxRow)
      }),
    renew: (claimId, ids, leaseMs) =>
      atomically(() => {
        const until = Date.now() + leaseMs
        return new Set(ids.filter((id) => changes(statement(db, sql.outboxRenew), until, until, id, claimId) === 1))
      }),
    delivered: (claimId, ids) =>
      atomically(() => {
        const now = Date.now()
        for (const id of ids) statement(db, sql.outboxDelivered).run(now, id, claimId)
      }),
    retry: (claimId, rows) =>
      atomically(() => {
        const now = Date.now()
        for (const row of rows) statement(db, sql.outboxRetry).run(now + row.delayMs, row.error, row.id, claimId)
      }),
    deadLetter: (claimId, rows) =>
      atomically(() => {
        const now = Date.now()
        for (const row of rows) {
          statement(db, sql.outboxDeadLetterCopy).run(row.error, now, row.id, claimId)
          statement(db, sql.outboxDeadLetterDelete).run(row.id, claimId)
        }
      }),
    // In turn too (one statement, no transaction): read while an engine call is open, it
    // would count rows that may roll back.
    pending: () => atomically(() => firstRow<{ n: number }>(statement(db, sql.outboxPending))!.n, false),
  }
}
