import type { DeadLetterStatements, OnceStatements, OutboxStatements } from '../../sql/dialect.js'

// ---- idem/queue (migration 3): outbox, dead letters; idem_once (migration 2) ----
// Times are Unix milliseconds of this process's clock (the protocol's `now`).

/** Records `(kind, subject, created_at)` unless already there: one change means the first time. */
export const onceInsert = 'INSERT INTO idem_once (kind, subject, created_at) VALUES (?, ?, ?) ON CONFLICT (kind, subject) DO NOTHING'

/** Queues one effect; a second add of the same `(topic, dedupe_key)` changes nothing. */
export const outboxInsert =
  'INSERT INTO idem_outbox (topic, dedupe_key, payload, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?) ' +
  'ON CONFLICT (topic, dedupe_key) DO NOTHING'

/**
 * Claims up to `limit` due rows in one statement (SQLite runs one writer at a time, so
 * no two claims interleave) and leases them: next_attempt_at and locked_until move
 * `lease` ahead, locked_by names the claim. Parameters: claimId, lockedUntil,
 * nextAttemptAt, now, limit.
 */
export const outboxClaim =
  'UPDATE idem_outbox SET attempts = attempts + 1, locked_by = ?, locked_until = ?, next_attempt_at = ? ' +
  'WHERE id IN (SELECT id FROM idem_outbox WHERE delivered_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?) ' +
  'RETURNING id, topic, dedupe_key, payload, attempts, last_error, created_at'

/**
 * Extends one row's lease while its delivery is still running, only if this claim still
 * holds it (its id back: renewed; nothing: taken over). next_attempt_at moves with
 * locked_until because due rows are found by next_attempt_at alone. Parameters:
 * lockedUntil, nextAttemptAt, id, claimId.
 */
export const outboxRenew =
  'UPDATE idem_outbox SET locked_until = ?, next_attempt_at = ? WHERE id = ? AND locked_by = ? AND delivered_at IS NULL RETURNING id'

/** Parameters: deliveredAt, id, claimId. */
export const outboxDelivered =
  'UPDATE idem_outbox SET delivered_at = ?, locked_until = NULL, locked_by = NULL, last_error = NULL WHERE id = ? AND locked_by = ?'

/** Parameters: nextAttemptAt, lastError, id, claimId. */
export const outboxRetry =
  'UPDATE idem_outbox SET next_attempt_at = ?, last_error = ?, locked_until = NULL, locked_by = NULL WHERE id = ? AND locked_by = ?'

/** Copies one leased row into idem_dead_letters. Parameters: lastError, deadAt, id, claimId. */
export const outboxDeadLetterCopy =
  'INSERT INTO idem_dead_letters (source, name, message_key, payload, attempts, last_error, first_seen_at, dead_at) ' +
  "SELECT 'outbox', topic, dedupe_key, payload, attempts, ?, created_at, ? FROM idem_outbox WHERE id = ? AND locked_by = ?"

/** Parameters: id, claimId. */
export const outboxDeadLetterDelete = 'DELETE FROM idem_outbox WHERE id = ? AND locked_by = ?'

/** How many outbox rows are not delivered yet. */
export const outboxPending = 'SELECT count(*) AS n FROM idem_outbox WHERE delivered_at IS NULL'

/** Parameters: deliveredBefore, limit. */
export const outboxPrune = 'DELETE FROM idem_outbox WHERE id IN (SELECT id FROM idem_outbox WHERE delivered_at < ? LIMIT ?)'

/** Parameters: source, name, messageKey, payload, attempts, lastError, firstSeenAt, deadAt. */
export const deadLetterInsert =
  'INSERT INTO idem_dead_letters (source, name, message_key, payload, attempts, last_error, first_seen_at, dead_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'

/** Parameters: source, name (or null for all), limit. */
export const deadLetterList =
  'SELECT id, source, name, message_key, payload, attempts, last_error, first_seen_at, dead_at FROM idem_dead_letters ' +
  'WHERE source = ? AND (? IS NULL OR name = ?) ORDER BY dead_at DESC, id DESC LIMIT ?'

/**
 * The outbox's statements: SQLite's drivers are synchronous and it has one writer, so a
 * dispatcher operation over several rows is one statement a row, all in one transaction
 * that nothing interleaves with. Claims do not filter by topic.
 */
export const outboxStatements: OutboxStatements = {
  filtersTopics: false,
  insert: ({ topic, dedupeKey, payload, delayMs }, now) => ({ text: outboxInsert, values: [topic, dedupeKey, payload, now + delayMs, now] }),
  claim: (claimId, limit, leaseMs, _topics, now) => [{ text: outboxClaim, values: [claimId, now + leaseMs, now + leaseMs, now, limit] }],
  renew: (claimId, ids, leaseMs, now) => ids.map((id) => ({ text: outboxRenew, values: [now + leaseMs, now + leaseMs, id, claimId] })),
  delivered: (claimId, ids, now) => ids.map((id) => ({ text: outboxDelivered, values: [now, id, claimId] })),
  retry: (claimId, rows, now) => rows.map((row) => ({ text: outboxRetry, values: [now + row.delayMs, row.error, row.id, claimId] })),
  deadLetter: (claimId, rows, now) =>
    rows.flatMap((row) => [
      { text: outboxDeadLetterCopy, values: [row.error, now, row.id, claimId] },
      { text: outboxDeadLetterDelete, values: [row.id, claimId] },
    ]),
  pending: () => ({ text: outboxPending, values: [] }),
  prune: (olderThanMs, limit, now) => ({ text: outboxPrune, values: [now - olderThanMs, limit] }),
}

/** `once`'s statement. */
export const onceStatements: OnceStatements = { mark: (kind, subject, now) => ({ text: onceInsert, values: [kind, subject, now] }) }

/** The dead letters' statements. */
export const deadLetterStatements: DeadLetterStatements = { list: (source, name, limit) => ({ text: deadLetterList, values: [source, name, name, limit] }) }
