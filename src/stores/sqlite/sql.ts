/** Every SQL statement the SQLite store runs. Times are Unix milliseconds. */

export const lookup =
  'SELECT fingerprint, outcome FROM idem_keys WHERE scope = ? AND key = ? AND expires_at > ?'

export const save =
  'INSERT INTO idem_keys (scope, key, fingerprint, outcome, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?) ' +
  'ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome, ' +
  'created_at = excluded.created_at, expires_at = excluded.expires_at'

/** Removes expired records, at most `limit` at a time. */
export const prune =
  'DELETE FROM idem_keys WHERE (scope, key) IN (SELECT scope, key FROM idem_keys WHERE expires_at <= ? LIMIT ?)'
