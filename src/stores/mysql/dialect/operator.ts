import type { OperatorStatements } from '../../sql/operator-dialect.js'
import type { Statement } from '../../sql/statement.js'

const text = (query: string, ...values: unknown[]): Statement => ({ text: query, values })

/** The size of tables (data and indexes) by information_schema, InnoDB's estimate. */
const size = (...names: string[]): Statement =>
  text(
    `SELECT SUM(data_length + index_length) AS bytes FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (${names.map(() => '?').join(', ')})`,
    ...names,
  )

// A record, not a claim's placeholder (fingerprint '').
const RECORD = "fingerprint <> ''"
// The UTC day of an epoch-millisecond time, whatever the session's time zone.
const day = (column: string): string => `DATE_FORMAT(DATE_ADD('1970-01-01', INTERVAL ${column} DIV 86400000 DAY), '%Y-%m-%d')`

/**
 * What `idem stats|inspect|prune` read of a MySQL database. Times are this process's
 * clock (`now`), as the store keeps them. Inbox ids are keys of scope
 * `inbox:<consumer>`, counted with the keys too.
 */
export const operatorStatements: OperatorStatements = {
  tables: text("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'idem\\_%' ORDER BY 1"),
  // The routines first, then the tables (none refers to another). MySQL commits each DROP as it runs it.
  objects: text(
    "SELECT CONCAT('DROP PROCEDURE `', REPLACE(routine_name, '`', '``'), '`') AS `drop`, 1 AS o FROM information_schema.routines " +
      "WHERE routine_schema = DATABASE() AND routine_name LIKE 'idem\\_%' " +
      "UNION ALL SELECT CONCAT('DROP TABLE `', REPLACE(table_name, '`', '``'), '`'), 2 FROM information_schema.tables " +
      "WHERE table_schema = DATABASE() AND table_name LIKE 'idem\\_%' ORDER BY o, `drop`",
  ),
  expired: (_present, now) => [text(`SELECT COUNT(*) AS n FROM idem_keys WHERE expires_at <= ? AND ${RECORD}`, now)],
  inspect: (_present, scope, key, now) => ({
    now: text('SELECT ? AS now', now),
    record: text(
      `SELECT fingerprint, created_at, expires_at, expires_at <= ? AS expired, LEFT(outcome, 20) AS head, OCTET_LENGTH(outcome) AS bytes FROM idem_keys WHERE scope = ? AND \`key\` = ? AND ${RECORD}`,
      now,
      scope,
      key,
    ),
  }),
  stats: (present, windowMs, now) => {
    const since = now - windowMs
    return {
      keys: text(`SELECT COUNT(*) AS total, COALESCE(SUM(expires_at > ?), 0) AS live, COALESCE(SUM(created_at > ?), 0) AS recent FROM idem_keys WHERE ${RECORD}`, now, since),
      byStatus: text(
        `SELECT CASE WHEN LEFT(outcome, 10) = '{"status":' AND SUBSTRING(outcome, 14, 1) IN (',', '}') THEN SUBSTRING(outcome, 11, 3) ELSE 'other' END AS status, COUNT(*) AS n
         FROM idem_keys WHERE created_at > ? AND ${RECORD} GROUP BY 1 ORDER BY 1`,
        since,
      ),
      byDay: text(`SELECT ${day('created_at')} AS day, COUNT(*) AS n FROM idem_keys WHERE created_at > ? AND ${RECORD} GROUP BY 1 ORDER BY 1`, since),
      keyBytes: size('idem_keys'),
      inbox: text(`SELECT COALESCE(SUM(expires_at > ?), 0) AS live, COALESCE(SUM(expires_at <= ?), 0) AS expired FROM idem_keys WHERE scope LIKE 'inbox:%' AND ${RECORD}`, now, now),
      ...(present.has('idem_outbox')
        ? {
            outbox: text(
              'SELECT COALESCE(SUM(delivered_at IS NULL), 0) AS pending, COALESCE(SUM(delivered_at IS NOT NULL), 0) AS delivered, ? - MIN(CASE WHEN delivered_at IS NULL THEN created_at END) AS oldest FROM idem_outbox',
              now,
            ),
            deadLetters: text('SELECT COUNT(*) AS total, COALESCE(SUM(dead_at > ?), 0) AS recent FROM idem_dead_letters', since),
          }
        : {}),
    }
  },
}
