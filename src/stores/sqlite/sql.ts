/** Every SQL statement the SQLite store runs. Times are Unix milliseconds. */

export const lookup =
  'SELECT fingerprint, outcome FROM idem_keys WHERE scope = ? AND key = ? AND expires_at > ?'

/** Writes a key's record with its effects, replacing an expired record of the same key. */
export const save =
  'INSERT INTO idem_keys (scope, key, fingerprint, outcome, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?) ' +
  'ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome, ' +
  'created_at = excluded.created_at, expires_at = excluded.expires_at'

/**
 * One pruning window: the next `limit` records after `(scope, key)` in key order. There
 * is no index on expiry (it would cost every insert), so pruning walks the table in
 * windows, each a short transaction of bounded work.
 */
export const pruneWindow =
  'SELECT scope, key, expires_at FROM idem_keys WHERE (scope, key) > (?, ?) ORDER BY scope, key LIMIT ?'

/** Deletes one record found by a pruning window, if it is still expired. */
export const pruneRecord = 'DELETE FROM idem_keys WHERE scope = ? AND key = ? AND expires_at <= ?'

/** Records `(kind, subject, created_at)` unless already there: one change means the first time. */
export const onceInsert = 'INSERT INTO idem_once (kind, subject, created_at) VALUES (?, ?, ?) ON CONFLICT (kind, subject) DO NOTHING'

// ---- idem/queue (migration 3): outbox, dead letters, inbox attempts ----

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
 * holds it (one change: renewed; none: taken over). next_attempt_at moves with
 * locked_until because due rows are found by next_attempt_at alone. Parameters:
 * lockedUntil, nextAttemptAt, id, claimId.
 */
export const outboxRenew =
  'UPDATE idem_outbox SET locked_until = ?, next_attempt_at = ? WHERE id = ? AND locked_by = ? AND delivered_at IS NULL'

/** Parameters: deliveredAt, id, claimId. */
export const outboxDelivered =
  'UPDATE idem_outbox SET delivered_at = ?, locked_until = NULL, locked_by = NULL, last_error = NULL WHERE id = ? AND locked_by = ?'

/** Parameters: nextAttemptAt, lastError, id, claimId. */
export const outboxRetry =
  'UPDATE idem_outbox SET next_attempt_at = ?, last_error = ?, locked_until = NULL, locked_by = NULL WHERE id = ? AND locked_by = ?'

/** Copies one leased row into idem_dead_letters. Parameters: lastError, deadAt, id, claimId. */
export const outboxDeadLetterCopy =
  "INSERT INTO idem_dead_letters (source, name, message_key, payload, attempts, last_error, first_seen_at, dead_at) " +
  "SELECT 'outbox', topic, dedupe_key, payload, attempts, ?, created_at, ? FROM idem_outbox WHERE id = ? AND locked_by = ?"

/** Parameters: id, claimId. */
export const outboxDeadLetterDelete = 'DELETE FROM idem_outbox WHERE id = ? AND locked_by = ?'

/** How many outbox rows are not delivered yet. */
export const outboxPending = 'SELECT count(*) AS n FROM idem_outbox WHERE delivered_at IS NULL'

/** Parameters: deliveredBefore, limit. */
export const outboxPrune =
  'DELETE FROM idem_outbox WHERE id IN (SELECT id FROM idem_outbox WHERE delivered_at < ? LIMIT ?)'

/** Counts one failed attempt. Parameters: consumer, messageKey, lastError, now, now. */
export const inboxAttemptRecord =
  'INSERT INTO idem_inbox_attempts (consumer, message_key, attempts, last_error, first_failed_at, last_failed_at) VALUES (?, ?, 1, ?, ?, ?) ' +
  'ON CONFLICT (consumer, message_key) DO UPDATE SET attempts = attempts + 1, last_error = excluded.last_error, last_failed_at = excluded.last_failed_at ' +
  'RETURNING attempts'

/** Reads and removes a message's failure count (inside the transaction that processes it). */
export const inboxAttemptTake =
  'DELETE FROM idem_inbox_attempts WHERE consumer = ? AND message_key = ? RETURNING attempts, last_error, first_failed_at'

/** Parameters: source, name, messageKey, payload, attempts, lastError, firstSeenAt, deadAt. */
export const deadLetterInsert =
  'INSERT INTO idem_dead_letters (source, name, message_key, payload, attempts, last_error, first_seen_at, dead_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'

/** Parameters: source, name (or null for all), limit. */
export const deadLetterList =
  'SELECT id, source, name, message_key, payload, attempts, last_error, first_seen_at, dead_at FROM idem_dead_letters ' +
  'WHERE source = ? AND (? IS NULL OR name = ?) ORDER BY dead_at DESC, id DESC LIMIT ?'

// ---- leased mode (migration 4): idem_leases, idem_steps ----
// Named parameters (@scope, @key, @token, @now, …). The writes through a claim's lease
// are compare-and-set on (state 'held', the claim's token): a replaced claim's token
// matches no row.

/** A leased key's claim record. */
export const leaseRead =
  'SELECT fingerprint, state, token, lease_until, outcome, expires_at FROM idem_leases WHERE scope = @scope AND key = @key'

/** A leased key's saved steps, name and result. */
export const leaseSteps = 'SELECT name, result FROM idem_steps WHERE scope = @scope AND key = @key'

/** Whether a leased key has any saved step (which binds it to its request). */
export const leaseHasSteps = 'SELECT 1 AS found FROM idem_steps WHERE scope = @scope AND key = @key LIMIT 1'

/** Drops a leased key's steps: once it completed, or when its expired record is replaced. */
export const leaseDropSteps = 'DELETE FROM idem_steps WHERE scope = @scope AND key = @key'

/** Writes a claim: a new row, or a takeover of an existing one. */
export const leaseClaim =
  'INSERT INTO idem_leases (scope, key, fingerprint, state, token, lease_until, outcome, expires_at) ' +
  "VALUES (@scope, @key, @fingerprint, 'held', @token, @leaseUntil, NULL, @expiresAt) " +
  "ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, state = 'held', token = excluded.token, " +
  'lease_until = excluded.lease_until, outcome = NULL, expires_at = excluded.expires_at'

const HELD = "scope = @scope AND key = @key AND state = 'held' AND token = @token AND expires_at > @now"

/** Extends a held lease; never lets the row expire before its lease. */
export const leaseRenew = `UPDATE idem_leases SET lease_until = @leaseUntil, expires_at = max(expires_at, @leaseUntil) WHERE ${HELD}`

/** Saves a step while the token holds, in one statement (so one atomic transaction). */
export const leaseSaveStep =
  'INSERT INTO idem_steps (scope, key, name, result, token, created_at) ' +
  `SELECT @scope, @key, @name, @result, @token, @now WHERE EXISTS (SELECT 1 FROM idem_leases WHERE ${HELD}) ` +
  'ON CONFLICT (scope, key, name) DO UPDATE SET result = excluded.result, token = excluded.token, created_at = excluded.created_at'

/** Stores the outcome while the token holds (the steps are dropped in the same transaction). */
export const leaseComplete =
  `UPDATE idem_leases SET state = 'completed', outcome = @outcome, lease_until = NULL, expires_at = @expiresAt WHERE ${HELD}`

/** Ends a held lease without an outcome; the steps stay. */
export const leaseRelease = `UPDATE idem_leases SET state = 'free', lease_until = NULL WHERE ${HELD}`

/** A row while the token holds the key: what a lease's fencing token is checked with. */
export const leaseHolds = `SELECT 1 AS found FROM idem_leases WHERE ${HELD}`

/** One pruning batch of expired leased keys. */
export const leasePruneBatch = 'SELECT scope, key FROM idem_leases WHERE expires_at <= @now LIMIT @limit'

/** Deletes one leased key of a pruning batch, if it is still expired. */
export const leasePruneKey = 'DELETE FROM idem_leases WHERE scope = @scope AND key = @key AND expires_at <= @now'
