import type { InboxStatements } from '../../sql/dialect.js'
import { named, type Statement } from '../../sql/statement.js'
import { keyStatements, save } from './keys.js'
import { deadLetterInsert } from './queue.js'

// ---- the inbox: ids as keys of scope `inbox:<consumer>` in idem_keys, failures in idem_inbox_attempts ----

// Any redelivery of an id is the same message: the record's fingerprint is constant.
const INBOX_FINGERPRINT = 'idem-inbox-v1'

/**
 * `idem_inbox_failure(consumer, key, error, now)`: counts one failed attempt, keeping its
 * error; one row, `attempts`, the count after it. The upsert locks the row, so the read
 * after it in the same transaction is this failure's count.
 */
export const inboxFailureProcedure = `CREATE PROCEDURE idem_inbox_failure(IN p_consumer VARBINARY(3072), IN p_key VARBINARY(3072), IN p_error TEXT, IN p_now BIGINT)
MODIFIES SQL DATA
BEGIN
  INSERT INTO idem_inbox_attempts (consumer, message_key, attempts, last_error, first_failed_at, last_failed_at)
    VALUES (p_consumer, p_key, 1, p_error, p_now, p_now)
    ON DUPLICATE KEY UPDATE attempts = attempts + 1, last_error = p_error, last_failed_at = p_now;
  SELECT attempts FROM idem_inbox_attempts WHERE consumer = p_consumer AND message_key = p_key FOR UPDATE;
END`

/** `idem_inbox_take_failures(consumer, key)`: reads and removes a message's failure count (MySQL has no DELETE … RETURNING). */
export const inboxTakeFailuresProcedure = `CREATE PROCEDURE idem_inbox_take_failures(IN p_consumer VARBINARY(3072), IN p_key VARBINARY(3072))
MODIFIES SQL DATA
BEGIN
  SELECT attempts, last_error, first_failed_at FROM idem_inbox_attempts WHERE consumer = p_consumer AND message_key = p_key FOR UPDATE;
  DELETE FROM idem_inbox_attempts WHERE consumer = p_consumer AND message_key = p_key;
END`

const CLAIM = named('inbox_claim', 'CALL idem_inbox_claim(?, ?, ?, ?)')
const SAVE = named('inbox_save', save)

/**
 * The inbox's statements: a message id is claimed as a key of scope `inbox:<consumer>`
 * (`idem_inbox_claim`, the key claim's decision as a state), its record (a constant
 * fingerprint, outcome `null`) written at commit in the transaction the handler wrote
 * through; failure counts in `idem_inbox_attempts`, dead letters in `idem_dead_letters`.
 */
export const inboxStatements: InboxStatements = {
  opening: keyStatements.opening,
  claim: (consumer, key, waitMs, now) => ({ statement: CLAIM, values: [consumer, key, waitMs, now] }),
  save: (consumer, key, retentionMs, now) => ({ statement: SAVE, values: [INBOX_FINGERPRINT, 'null', now, now + retentionMs, `inbox:${consumer}`, key] }),
  commit: keyStatements.commit,
  takeFailures: (consumer, key): Statement => ({ text: 'CALL idem_inbox_take_failures(?, ?)', values: [consumer, key] }),
  recordFailure: (consumer, key, error, now) => ({ text: 'CALL idem_inbox_failure(?, ?, ?, ?)', values: [consumer, key, error, now] }),
  deadLetter: (consumer, key, letter, now) => ({
    text: deadLetterInsert,
    values: ['inbox', consumer, key, letter.payload, letter.attempts, letter.error, letter.firstSeenAt?.getTime() ?? now, now],
  }),
}
