import type { DeadLetterTable } from '../../ports/dead-letter-table.js'
import type { OnceTable } from '../../ports/once-table.js'
import type { ClaimedRow, OutboxTable } from '../../ports/outbox-table.js'
import type { DeadLetterStatements, OnceStatements, OutboxStatements } from './dialect.js'
import type { StoreDriver } from './driver.js'
import type { Result, Statement } from './statement.js'
import { toDate } from './values.js'

/**
 * The outbox's table over a SQL store's dialect and driver: `add` in the caller's
 * transaction (synchronous where the driver is), every dispatcher operation its own
 * short transaction.
 */
export function outboxTable<Tx, Added extends boolean | Promise<boolean>>(outbox: OutboxStatements, driver: StoreDriver<Tx, Added>): OutboxTable<Tx, Added> {
  const run = (statements: readonly Statement[]) => driver.transaction(statements)
  return {
    filtersTopics: outbox.filtersTopics,
    add: (tx, entry) => driver.join(tx, 'outbox.add').wroteOne(outbox.insert(entry, Date.now())),
    claim: async (claimId, limit, leaseMs, topics) => rowsOf<OutboxRowColumns>(await run(outbox.claim(claimId, limit, leaseMs, topics, Date.now()))).map(claimedOutboxRow),
    renew: async (claimId, ids, leaseMs) => new Set(rowsOf<{ id: unknown }>(await run(outbox.renew(claimId, ids, leaseMs, Date.now()))).map((row) => String(row.id))),
    delivered: async (claimId, ids) => void (await run(outbox.delivered(claimId, ids, Date.now()))),
    retry: async (claimId, rows) => void (await run(outbox.retry(claimId, rows, Date.now()))),
    deadLetter: async (claimId, rows) => void (await run(outbox.deadLetter(claimId, rows, Date.now()))),
    pending: async () => Number((rowsOf<{ n: number | string }>(await run([outbox.pending()]))[0]!).n),
  }
}

/** Every row of every result, in order. */
function rowsOf<Row>(results: readonly Result[]): Row[] {
  return results.flatMap((result) => result.rows as Row[])
}

/** An `idem_outbox` row as a dialect reads it: an id as text or an integer, a time as a date or epoch milliseconds. */
interface OutboxRowColumns {
  id: string | number
  topic: string
  dedupe_key: string
  payload: string
  attempts: number
  last_error: string | null
  created_at: Date | number
}

function claimedOutboxRow(row: OutboxRowColumns): ClaimedRow {
  return {
    id: String(row.id),
    topic: row.topic,
    dedupeKey: row.dedupe_key,
    payload: JSON.parse(row.payload),
    attempts: Number(row.attempts),
    lastError: row.last_error,
    createdAt: toDate(row.created_at),
  }
}

/** `once`'s table: the mark is one write in the caller's transaction, so a concurrent mark of the same pair waits for it. */
export function onceTable<Tx, Marked extends boolean | Promise<boolean>>(once: OnceStatements, driver: StoreDriver<Tx, Marked>): OnceTable<Tx, Marked> {
  return { mark: (tx, kind, subject) => driver.join(tx, 'once').wroteOne(once.mark(kind, subject, Date.now())) }
}

/** Dead letters, read on their own. */
export function deadLetterTable<Tx>(deadLetters: DeadLetterStatements, driver: StoreDriver<Tx, boolean | Promise<boolean>>): DeadLetterTable {
  return {
    async list({ source, name, limit }) {
      const { rows } = await driver.query(deadLetters.list(source, name, limit))
      return (rows as DeadLetterColumns[]).map((row) => ({
        id: String(row.id),
        source: row.source,
        name: row.name,
        messageKey: row.message_key,
        payload: row.payload === null ? null : JSON.parse(row.payload),
        attempts: Number(row.attempts),
        lastError: row.last_error,
        firstSeenAt: toDate(row.first_seen_at),
        deadAt: toDate(row.dead_at),
      }))
    },
  }
}

interface DeadLetterColumns {
  id: string | number
  source: 'inbox' | 'outbox'
  name: string
  message_key: string
  payload: string | null
  attempts: number
  last_error: string
  first_seen_at: Date | number
  dead_at: Date | number
}
