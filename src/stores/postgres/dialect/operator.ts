import type { OperatorStatements, StatsStatements } from '../../sql/operator-dialect.js'
import type { Statement } from './statement.js'
import { quoteSchema } from './statement.js'
import { literal } from './migrations.js'

const text = (query: string, values: unknown[] = []): Statement => ({ text: query, values })

/**
 * What `idem stats|inspect|prune` read of a Postgres schema. The key rows are those of
 * both layouts: `idem_keys` and, from migration 6 on, the daily partitions of
 * `idem_keys_by_day`, so the commands see every key whichever layout the store writes.
 */
export function operatorStatements(schema: string): OperatorStatements {
  const s = quoteSchema(schema)
  return {
    tables: text(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_name LIKE 'idem\\_%' ORDER BY 1`,
      [schema],
    ),
    // Tables first (a partitioned table takes its partitions, and CASCADE what refers to it), then functions.
    objects: text(
      `SELECT "drop" FROM (
         SELECT format('DROP TABLE %I.%I CASCADE', n.nspname, c.relname) AS "drop", 1 AS kind, c.relname AS name
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname LIKE 'idem\\_%'
         UNION ALL
         SELECT format('DROP ROUTINE %I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)), 2, p.proname
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = $1 AND p.proname LIKE 'idem\\_%'
       ) o ORDER BY kind, name, "drop"`,
      [schema],
    ),
    expired: (present) => [
      text(
        `SELECT (SELECT count(*) FROM ${keyRows(s, present)} WHERE expires_at <= now()) + (SELECT count(*) FROM ${s}.idem_inbox WHERE expires_at <= now()) + ` +
          `(SELECT count(*) FROM ${s}.idem_leases WHERE expires_at <= now()) AS n`,
      ),
    ],
    inspect: (present, scope, key) => ({
      now: text('SELECT now() AS now'),
      record: text(
        `SELECT fingerprint, created_at, expires_at, expires_at <= now() AS expired, left(outcome, 20) AS head, octet_length(outcome) AS bytes
         FROM ${keyRows(s, present)} WHERE scope = $1 AND key = $2 ORDER BY expires_at DESC LIMIT 1`,
        [scope, key],
      ),
      lease: text(
        `SELECT fingerprint, state, token::text AS token, lease_until, coalesce(lease_until > clock_timestamp(), false) AS lease_live,
                expires_at, expires_at <= now() AS expired, left(outcome, 20) AS head
         FROM ${s}.idem_leases WHERE scope = $1 AND key = $2`,
        [scope, key],
      ),
      steps: text(`SELECT name, created_at, token::text AS token FROM ${s}.idem_steps WHERE scope = $1 AND key = $2 ORDER BY created_at, name`, [scope, key]),
    }),
    stats: (present, windowMs) => statsStatements(s, present, windowMs),
  }
}

/** Counts and sizes of both key layouts, the inbox, leases, outbox and dead letters. */
function statsStatements(s: string, present: ReadonlySet<string>, windowMs: number): StatsStatements {
  const keys = keyRows(s, present)
  const window = `now() - $1 * interval '1 millisecond'`
  return {
    keys: text(
      `SELECT count(*) AS total, count(*) FILTER (WHERE expires_at > now()) AS live, count(*) FILTER (WHERE created_at > ${window}) AS recent FROM ${keys}`,
      [windowMs],
    ),
    byStatus: text(
      `SELECT coalesce(substring(left(outcome, 20) from '^\\{"status":(\\d{3})[,}]'), 'other') AS status, count(*) AS n
       FROM ${keys} WHERE created_at > ${window} GROUP BY 1 ORDER BY 1`,
      [windowMs],
    ),
    byDay: text(
      `SELECT to_char(date_trunc('day', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, count(*) AS n
       FROM ${keys} WHERE created_at > ${window} GROUP BY 1 ORDER BY 1`,
      [windowMs],
    ),
    keyBytes: text(`SELECT ${keyBytes(s, present)} AS bytes`),
    leases: text(`SELECT state, count(*) AS n, count(*) FILTER (WHERE expires_at <= now()) AS expired FROM ${s}.idem_leases GROUP BY state`),
    leaseBytes: text(`SELECT pg_total_relation_size(${literal(`${s}.idem_leases`)}) + pg_total_relation_size(${literal(`${s}.idem_steps`)}) AS bytes`),
    inbox: text(`SELECT count(*) FILTER (WHERE expires_at > now()) AS live, count(*) FILTER (WHERE expires_at <= now()) AS expired FROM ${s}.idem_inbox`),
    outbox: text(
      `SELECT count(*) FILTER (WHERE delivered_at IS NULL) AS pending, count(*) FILTER (WHERE delivered_at IS NOT NULL) AS delivered,
              extract(epoch FROM now() - min(created_at) FILTER (WHERE delivered_at IS NULL)) * 1000 AS oldest
       FROM ${s}.idem_outbox`,
    ),
    deadLetters: text(`SELECT count(*) AS total, count(*) FILTER (WHERE dead_at > ${window}) AS recent FROM ${s}.idem_dead_letters`, [windowMs]),
  }
}

/** The key rows of both layouts (a schema from before migration 6 has only `idem_keys`). */
function keyRows(s: string, present: ReadonlySet<string>): string {
  if (!present.has('idem_keys_by_day')) return `${s}.idem_keys`
  const columns = 'scope, key, fingerprint, outcome, created_at, expires_at'
  return `(SELECT ${columns} FROM ${s}.idem_keys UNION ALL SELECT ${columns} FROM ${s}.idem_keys_by_day) AS keys`
}

function keyBytes(s: string, present: ReadonlySet<string>): string {
  const keys = `pg_total_relation_size(${literal(`${s}.idem_keys`)})`
  if (!present.has('idem_keys_by_day')) return keys
  return `${keys} + (SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree(${literal(`${s}.idem_keys_by_day`)}))`
}
