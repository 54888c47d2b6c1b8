import type { InboxStatements, KeyStatements } from '../../sql/dialect.js'
import { named, type Statement } from '../../sql/statement.js'
import { deadLetterInsert } from './queue.js'

// ---- idem_keys (migration 1): the engine's keys, and the inbox's ids as keys ----
// Times are Unix milliseconds of this process's clock (the protocol's `now`).

/** Reads a key's live record. */
export const lookup = 'SELECT fingerprint, outcome FROM idem_keys WHERE scope = ? AND key = ? AND expires_at > ?'

/** Reads a key's live record as the claim's one value (src/stores/sql/key-sessions.ts `readClaim`); no row for a new key. */
export const claim = `SELECT 'f' || length(fingerprint) || ':' || fingerprint || outcome AS claim FROM idem_keys WHERE scope = ? AND key = ? AND expires_at > ?`

/** Writes a key's record with its effects, replacing an expired record of the same key. */
export const save =
  'INSERT INTO idem_keys (scope, key, fingerprint, outcome, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?) ' +
  'ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome, ' +
  'created_at = excluded.created_at, expires_at = excluded.expires_at'

/**
 * The key table's statements for the protocol. SQLite has one writer per database: a
 * claim is `BEGIN IMMEDIATE` (the write lock) and a read of the key in it, the driver
 * holding the key in process and the connection's turn before (driver/store-driver.ts).
 * Every retry reads first: a read is a call into the library, no round trip.
 */
export const keyStatements: KeyStatements = {
  opening: named('begin', 'BEGIN IMMEDIATE'),
  claim: { statement: named('claim', claim), takes: ['scope', 'key', 'now'] },
  lookup: { statement: named('lookup', lookup), takes: ['scope', 'key', 'now'] },
  save: { statement: named('save', save), takes: ['scope', 'key', 'fingerprint', 'outcome', 'now', 'expiresAt'] },
  commit: named('commit', 'COMMIT'),
  readFirst: 'every key',
}

// Any redelivery of an id is the same message: the record's fingerprint is constant.
const INBOX_FINGERPRINT = 'idem-inbox-v1'

/** Whether a message id is recorded as processed: one row, `state` `found`. */
export const inboxFound = "SELECT 'found' AS state FROM idem_keys WHERE scope = ? AND key = ? AND expires_at > ?"

const FOUND = named('inbox_found', inboxFound)

/** Counts one failed attempt. Parameters: consumer, messageKey, lastError, now, now. */
export const inboxAttemptRecord =
  'INSERT INTO idem_inbox_attempts (consumer, message_key, attempts, last_error, first_failed_at, last_failed_at) VALUES (?, ?, 1, ?, ?, ?) ' +
  'ON CONFLICT (consumer, message_key) DO UPDATE SET attempts = attempts + 1, last_error = excluded.last_error, last_failed_at = excluded.last_failed_at ' +
  'RETURNING attempts'

/** Reads and removes a message's failure count (inside the transaction that processes it). */
export const inboxAttemptTake = 'DELETE FROM idem_inbox_attempts WHERE consumer = ? AND message_key = ? RETURNING attempts, last_error, first_failed_at'

/**
 * The inbox's statements: a message id is a key of scope `inbox:<consumer>` in
 * `idem_keys`, whose record (a constant fingerprint, outcome `null`) is written at
 * commit, in the transaction the handler wrote through; failure counts in
 * `idem_inbox_attempts`, dead letters in `idem_dead_letters`.
 */
export const inboxStatements: InboxStatements = {
  opening: keyStatements.opening,
  claim: (consumer, key, _waitMs, now) => ({ statement: FOUND, values: [`inbox:${consumer}`, key, now] }),
  lookup: (consumer, key, now) => ({ statement: FOUND, values: [`inbox:${consumer}`, key, now] }),
  save: (consumer, key, retentionMs, now) => ({ statement: keyStatements.save.statement, values: [`inbox:${consumer}`, key, INBOX_FINGERPRINT, 'null', now, now + retentionMs] }),
  commit: keyStatements.commit,
  takeFailures: (consumer, key): Statement => ({ text: inboxAttemptTake, values: [consumer, key] }),
  recordFailure: (consumer, key, error, now) => ({ text: inboxAttemptRecord, values: [consumer, key, error, now, now] }),
  deadLetter: (consumer, key, letter, now) => ({
    text: deadLetterInsert,
    values: ['inbox', consumer, key, letter.payload, letter.attempts, letter.error, letter.firstSeenAt?.getTime() ?? now, now],
  }),
}
