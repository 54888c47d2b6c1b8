import type { KeyTable } from './keys.js'
import { named, quoteSchema, type Statement } from './statement.js'

// ---- idem_inbox (migration 5) and idem_inbox_attempts (migration 3) ----

/**
 * `idem_inbox`: one narrow row per processed message, `(consumer, message_key,
 * expires_at)`. The scope is the consumer's name. Its claims take an advisory lock of
 * their own (see `inboxLockId`) the way `idem_claim` does, so a duplicate delivery waits
 * for the one in flight at most `waitMs`. The fingerprint and outcome of a call are not
 * kept: any redelivery of an id is the same message.
 */
export function inboxTable(schema: string): KeyTable {
  const s = quoteSchema(schema)
  const claim = (consumer: string, key: string, waitMs: number): Statement => ({
    text: `SELECT ${s}.idem_inbox_claim($1, $2, $3) AS state`,
    values: [consumer, key, waitMs],
  })
  const mark = (consumer: string, key: string, _fingerprint: string, ttlMs: number): Statement => ({
    text:
      `INSERT INTO ${s}.idem_inbox (consumer, message_key, expires_at) ` +
      `SELECT $1, $2, now() + $3 * interval '1 millisecond' WHERE pg_try_advisory_xact_lock(${inboxLockId('$1', '$2')}) ` +
      `ON CONFLICT DO NOTHING`,
    values: [consumer, key, ttlMs],
  })
  const tryLock = (consumer: string, key: string): Statement => ({
    text: `SELECT pg_try_advisory_xact_lock(${inboxLockId('$1', '$2')}) AS free`,
    values: [consumer, key],
  })
  const lookup = (consumer: string, key: string): Statement => ({
    text: `SELECT 'found' AS state FROM ${s}.idem_inbox WHERE consumer = $1 AND message_key = $2 AND expires_at > now()`,
    values: [consumer, key],
  })
  const save = (consumer: string, key: string, _fingerprint: string, _outcome: string, ttlMs: number): Statement => ({
    text: `INSERT INTO ${s}.idem_inbox (consumer, message_key, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')`,
    values: [consumer, key, ttlMs],
  })
  return {
    keepsOutcomes: false,
    tryLock,
    claim,
    mark,
    lookup,
    save,
    prepared: {
      claim: named('inbox_claim', claim('', '', 0).text),
      mark: named('inbox_mark', mark('', '', '', 0).text),
      lookup: named('inbox_lookup', lookup('', '').text),
      save: named('inbox_save', save('', '', '', '', 0).text),
    },
  }
}

/**
 * The advisory lock of an inbox id, over SQL expressions for the consumer and the key.
 * Length-prefixed like `idem_claim`'s, and in a namespace of its own so an inbox id
 * never shares a lock with an `idem_keys` key (a hash collision only makes two wait).
 */
export function inboxLockId(consumer: string, key: string): string {
  return `hashtextextended('inbox/' || length(${consumer})::text || ':' || ${consumer} || ${key}, 0)`
}


/** Counts one failed attempt of an inbox message. @returns the row's `attempts` */
export function inboxAttemptRecord(schema: string, consumer: string, messageKey: string, error: string): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `INSERT INTO ${s}.idem_inbox_attempts AS a (consumer, message_key, attempts, last_error) VALUES ($1, $2, 1, $3) ` +
      `ON CONFLICT (consumer, message_key) DO UPDATE SET attempts = a.attempts + 1, last_error = excluded.last_error, last_failed_at = now() ` +
      `RETURNING attempts`,
    values: [consumer, messageKey, error],
  }
}

/**
 * Reads and removes a message's failure count in one statement, inside the
 * transaction that processes it: a success commits the removal, a failure rolls it
 * back.
 */
export function inboxAttemptTake(schema: string, consumer: string, messageKey: string): Statement {
  return {
    text:
      `DELETE FROM ${quoteSchema(schema)}.idem_inbox_attempts WHERE consumer = $1 AND message_key = $2 ` +
      `RETURNING attempts, last_error, first_failed_at`,
    values: [consumer, messageKey],
  }
}

