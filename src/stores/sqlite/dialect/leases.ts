/** The leased store's statements (leased.ts). Times are Unix milliseconds. */

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
