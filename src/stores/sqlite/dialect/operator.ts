import type { OperatorStatements } from '../../sql/operator-dialect.js'
import type { Statement } from '../../sql/statement.js'

const text = (query: string, ...values: unknown[]): Statement => ({ text: query, values })

/** The size of tables by SQLite's `dbstat` (a build without it fails the statement: size unknown). */
const size = (...names: string[]): Statement => text(`SELECT coalesce(sum(pgsize), 0) AS bytes FROM dbstat WHERE name IN (${names.map(() => '?').join(', ')})`, ...names)

/**
 * What `idem stats|inspect|prune` read of a SQLite database. Times are this process's
 * clock (`now`); the leased and queue tables are read where an older schema has them.
 * Inbox ids are keys of scope `inbox:<consumer>`, counted with the keys too.
 */
export const operatorStatements: OperatorStatements = {
  tables: text("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'idem\\_%' ESCAPE '\\' ORDER BY 1"),
  // The newest first: a table that refers to another goes before it. Indexes and triggers go with their table.
  objects: text(
    `SELECT 'DROP TABLE "' || replace(name, '"', '""') || '"' AS "drop" FROM sqlite_master WHERE type = 'table' AND name LIKE 'idem\\_%' ESCAPE '\\' ORDER BY rowid DESC`,
  ),
  expired: (present, now) => [
    text('SELECT count(*) AS n FROM idem_keys WHERE expires_at <= ?', now),
    ...(present.has('idem_leases') ? [text('SELECT count(*) AS n FROM idem_leases WHERE expires_at <= ?', now)] : []),
  ],
  inspect: (present, scope, key, now) => ({
    now: text('SELECT ? AS now', now),
    record: text(
      'SELECT fingerprint, created_at, expires_at, expires_at <= ? AS expired, substr(outcome, 1, 20) AS head, length(CAST(outcome AS BLOB)) AS bytes FROM idem_keys WHERE scope = ? AND key = ?',
      now,
      scope,
      key,
    ),
    ...(present.has('idem_leases')
      ? {
          lease: text(
            'SELECT fingerprint, state, token, lease_until, coalesce(lease_until > ?, 0) AS lease_live, expires_at, expires_at <= ? AS expired, substr(outcome, 1, 20) AS head FROM idem_leases WHERE scope = ? AND key = ?',
            now,
            now,
            scope,
            key,
          ),
          steps: text('SELECT name, created_at, token FROM idem_steps WHERE scope = ? AND key = ? ORDER BY created_at, name', scope, key),
        }
      : {}),
  }),
  stats: (present, windowMs, now) => {
    const since = now - windowMs
    const queue = present.has('idem_outbox')
    return {
      keys: text('SELECT count(*) AS total, coalesce(sum(expires_at > ?), 0) AS live, coalesce(sum(created_at > ?), 0) AS recent FROM idem_keys', now, since),
      byStatus: text(
        `SELECT CASE WHEN substr(outcome, 1, 10) = '{"status":' AND substr(outcome, 14, 1) IN (',', '}') THEN substr(outcome, 11, 3) ELSE 'other' END AS status, count(*) AS n
         FROM idem_keys WHERE created_at > ? GROUP BY 1 ORDER BY 1`,
        since,
      ),
      byDay: text("SELECT strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') AS day, count(*) AS n FROM idem_keys WHERE created_at > ? GROUP BY 1 ORDER BY 1", since),
      keyBytes: size('idem_keys'),
      ...(present.has('idem_leases') ? { leases: text('SELECT state, count(*) AS n, coalesce(sum(expires_at <= ?), 0) AS expired FROM idem_leases GROUP BY state', now) } : {}),
      leaseBytes: size('idem_leases', 'idem_steps'),
      inbox: text("SELECT coalesce(sum(expires_at > ?), 0) AS live, coalesce(sum(expires_at <= ?), 0) AS expired FROM idem_keys WHERE scope LIKE 'inbox:%'", now, now),
      ...(queue
        ? {
            outbox: text(
              'SELECT coalesce(sum(delivered_at IS NULL), 0) AS pending, coalesce(sum(delivered_at IS NOT NULL), 0) AS delivered, ? - min(CASE WHEN delivered_at IS NULL THEN created_at END) AS oldest FROM idem_outbox',
              now,
            ),
            deadLetters: text('SELECT count(*) AS total, coalesce(sum(dead_at > ?), 0) AS recent FROM idem_dead_letters', since),
          }
        : {}),
    }
  },
}
