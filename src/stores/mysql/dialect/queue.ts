import { randomBytes } from 'node:crypto'
import type { DeadLetterStatements, OnceStatements, OutboxStatements } from '../../sql/dialect.js'
import type { Statement } from '../../sql/statement.js'

// ---- idem_outbox, idem_dead_letters, idem_once (migration 1) ----
// Times are epoch milliseconds of this process's clock (the protocol's `now`). Identity
// columns are VARBINARY: read back through CONVERT(… USING utf8mb4) as text.

/**
 * Records `(kind, subject)`: a plain INSERT, which a concurrent mark of the same pair
 * waits on (its duplicate check) until the first commits; the driver reads the
 * duplicate-key error (1062) as "not the first time" (driver/store-driver.ts `wroteOne`).
 */
export const onceInsert = 'INSERT INTO idem_once (kind, subject, created_at) VALUES (?, ?, ?)'

/** Queues one effect; a second add of the same `(topic, dedupe_key)` is a duplicate-key error, read as false. */
export const outboxInsert = 'INSERT INTO idem_outbox (topic, dedupe_key, payload, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?)'

const DUE = 'delivered_at IS NULL AND next_attempt_at <= ?'

/**
 * Leases up to `limit` due rows to one claim call: SKIP LOCKED passes over rows another
 * claim is taking right now, and the lease (next_attempt_at and locked_until pushed
 * ahead, locked_by the claim, lease_id this call) keeps them from other claims until it
 * runs out. Parameters: now, [topics], limit, claimId, leaseId, lockedUntil, nextAttemptAt.
 */
function claimText(topics: boolean): string {
  return (
    `UPDATE idem_outbox AS o JOIN (SELECT id FROM idem_outbox WHERE ${DUE}${topics ? ' AND topic IN (?)' : ''} ` +
    'ORDER BY next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED) AS due ON o.id = due.id ' +
    'SET o.attempts = o.attempts + 1, o.locked_by = ?, o.lease_id = ?, o.locked_until = ?, o.next_attempt_at = ?'
  )
}

const CLAIM = claimText(false)
const CLAIM_TOPICS = claimText(true)
const ROW = 'id, CONVERT(topic USING utf8mb4) AS topic, CONVERT(dedupe_key USING utf8mb4) AS dedupe_key, payload, attempts, last_error, created_at'
const HELD = 'id IN (?) AND locked_by = ?'

/**
 * The outbox's statements: each dispatcher operation a few statements in one short
 * transaction of its own (MySQL has no UPDATE … RETURNING: a claim marks its rows with
 * a lease id of its own and reads them back by it).
 */
export const outboxStatements: OutboxStatements = {
  filtersTopics: true,
  insert: ({ topic, dedupeKey, payload, delayMs }, now) => ({ text: outboxInsert, values: [topic, dedupeKey, payload, now + delayMs, now] }),
  claim: (claimId, limit, leaseMs, topics, now) => {
    const leaseId = randomBytes(16)
    const until = now + leaseMs
    const claim = topics === null ? { text: CLAIM, values: [now, limit, claimId, leaseId, until, until] } : { text: CLAIM_TOPICS, values: [now, [...topics], limit, claimId, leaseId, until, until] }
    if (topics !== null && topics.length === 0) return []
    return [claim, { text: `SELECT ${ROW} FROM idem_outbox WHERE lease_id = ? ORDER BY next_attempt_at, id`, values: [leaseId] }]
  },
  renew: (claimId, ids, leaseMs, now) =>
    ids.length === 0
      ? []
      : [
          { text: `UPDATE idem_outbox SET locked_until = ?, next_attempt_at = ? WHERE ${HELD} AND delivered_at IS NULL`, values: [now + leaseMs, now + leaseMs, [...ids], claimId] },
          { text: `SELECT id FROM idem_outbox WHERE ${HELD} AND delivered_at IS NULL AND locked_until = ?`, values: [[...ids], claimId, now + leaseMs] },
        ],
  delivered: (claimId, ids, now) =>
    ids.length === 0 ? [] : [{ text: `UPDATE idem_outbox SET delivered_at = ?, locked_until = NULL, locked_by = NULL, lease_id = NULL, last_error = NULL WHERE ${HELD}`, values: [now, [...ids], claimId] }],
  retry: (claimId, rows, now) =>
    rows.map((row) => ({
      text: 'UPDATE idem_outbox SET next_attempt_at = ?, last_error = ?, locked_until = NULL, locked_by = NULL, lease_id = NULL WHERE id = ? AND locked_by = ?',
      values: [now + row.delayMs, row.error, row.id, claimId],
    })),
  deadLetter: (claimId, rows, now) =>
    rows.flatMap((row) => [
      {
        text:
          'INSERT INTO idem_dead_letters (source, name, message_key, payload, attempts, last_error, first_seen_at, dead_at) ' +
          "SELECT 'outbox', topic, dedupe_key, payload, attempts, ?, created_at, ? FROM idem_outbox WHERE id = ? AND locked_by = ?",
        values: [row.error, now, row.id, claimId],
      },
      { text: 'DELETE FROM idem_outbox WHERE id = ? AND locked_by = ?', values: [row.id, claimId] },
    ]),
  pending: () => ({ text: 'SELECT COUNT(*) AS n FROM idem_outbox WHERE delivered_at IS NULL', values: [] }),
  prune: (olderThanMs, limit, now) => ({ text: 'DELETE FROM idem_outbox WHERE delivered_at < ? ORDER BY delivered_at LIMIT ?', values: [now - olderThanMs, limit] }),
}

/** Parameters: source, name, messageKey, payload, attempts, lastError, firstSeenAt, deadAt. */
export const deadLetterInsert =
  'INSERT INTO idem_dead_letters (source, name, message_key, payload, attempts, last_error, first_seen_at, dead_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'

const deadLetterList =
  'SELECT id, source, CONVERT(name USING utf8mb4) AS name, CONVERT(message_key USING utf8mb4) AS message_key, payload, attempts, last_error, first_seen_at, dead_at ' +
  'FROM idem_dead_letters WHERE source = ? AND (? IS NULL OR name = ?) ORDER BY dead_at DESC, id DESC LIMIT ?'

/** `once`'s statement. */
export const onceStatements: OnceStatements = { mark: (kind, subject, now): Statement => ({ text: onceInsert, values: [kind, subject, now] }) }

/** The dead letters' statements. */
export const deadLetterStatements: DeadLetterStatements = { list: (source, name, limit) => ({ text: deadLetterList, values: [source, name, name, limit] }) }
