/** Every SQL statement the SQLite store runs. Times are Unix milliseconds. */

export const lookup =
  'SELECT fingerprint, outcome FROM idem_keys WHERE scope = ? AND key = ? AND expires_at > ?'

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

export const pruneRecord = 'DELETE FROM idem_keys WHERE scope = ? AND key = ? AND expires_at <= ?'

/** Records `(kind, subject, created_at)` unless already there: one change means the first time. */
export const onceInsert = 'INSERT INTO idem_once (kind, subject, created_at) VALUES (?, ?, ?) ON CONFLICT (kind, subject) DO NOTHING'
