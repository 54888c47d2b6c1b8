import type { InboxStatements } from '../../sql/dialect.js'
import { deadLetterInsert } from './dead-letters.js'
import { begin, COMMIT, named, quoteSchema, type Isolation } from './statement.js'

// ---- idem_inbox (migration 5) and idem_inbox_attempts (migration 3) ----

/**
 * The inbox's statements on one schema, built once per store (its claim runs on every
 * message). `idem_inbox` keeps one narrow row per processed message, `(consumer,
 * message_key, expires_at)`; the scope is the consumer's name. Its claims take an
 * advisory lock of their own (see `inboxLockId`) the way the key claim does, so a
 * duplicate delivery waits for the one in flight at most `waitMs`. The fingerprint and
 * outcome of a call are not kept: any redelivery of an id is the same message.
 *
 * The three a message runs are prepared once per connection under their names:
 * - `mark` (READ COMMITTED only: it cannot see a stale snapshot): claims a new id with
 *   its row already written, under the id's advisory lock taken without waiting; no row
 *   when the id is recorded or another transaction holds it;
 * - `claim`: `idem_inbox_claim`, which waits for the lock and forgets an expired row;
 * - `save`: records a claimed id, at commit.
 */
export function inboxStatements(schema: string, isolation: Isolation): InboxStatements {
  const s = quoteSchema(schema)
  const mark = named(
    'inbox_mark',
    `INSERT INTO ${s}.idem_inbox (consumer, message_key, expires_at) ` +
      `SELECT $1, $2, now() + $3 * interval '1 millisecond' WHERE pg_try_advisory_xact_lock(${inboxLockId('$1', '$2')}) ` +
      `ON CONFLICT DO NOTHING`,
  )
  const claim = named('inbox_claim', `SELECT ${s}.idem_inbox_claim($1, $2, $3) AS state`)
  const save = named('inbox_save', `INSERT INTO ${s}.idem_inbox (consumer, message_key, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')`)
  const takeFailures = `DELETE FROM ${s}.idem_inbox_attempts WHERE consumer = $1 AND message_key = $2 RETURNING attempts, last_error, first_failed_at`
  const recordFailure =
    `INSERT INTO ${s}.idem_inbox_attempts AS a (consumer, message_key, attempts, last_error) VALUES ($1, $2, 1, $3) ` +
    `ON CONFLICT (consumer, message_key) DO UPDATE SET attempts = a.attempts + 1, last_error = excluded.last_error, last_failed_at = now() ` +
    `RETURNING attempts`
  return {
    opening: begin(isolation),
    // A stricter level keeps the usual claim, which handles its stale snapshots.
    ...(isolation === 'read committed' ? { mark: (consumer: string, key: string, retentionMs: number) => ({ statement: mark, values: [consumer, key, retentionMs] }) } : {}),
    claim: (consumer, key, waitMs) => ({ statement: claim, values: [consumer, key, waitMs] }),
    save: (consumer, key, retentionMs) => ({ statement: save, values: [consumer, key, retentionMs] }),
    commit: COMMIT,
    takeFailures: (consumer, key) => ({ text: takeFailures, values: [consumer, key] }),
    recordFailure: (consumer, key, error) => ({ text: recordFailure, values: [consumer, key, error] }),
    deadLetter: (consumer, key, letter) => deadLetterInsert(schema, 'inbox', consumer, key, letter.payload, letter.attempts, letter.error, letter.firstSeenAt ?? null),
  }
}

/**
 * The advisory lock of an inbox id, over SQL expressions for the consumer and the key.
 * Length-prefixed like the key claim's, and in a namespace of its own so an inbox id
 * never shares a lock with an `idem_keys` key (a hash collision only makes two wait).
 */
export function inboxLockId(consumer: string, key: string): string {
  return `hashtextextended('inbox/' || length(${consumer})::text || ':' || ${consumer} || ${key}, 0)`
}
