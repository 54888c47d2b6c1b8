import { quoteSchema, type Statement } from './statement.js'

// ---- the daily partitions of idem_keys_by_day (migration 6) ----
// A partition per UTC day of expiry, named idem_keys_by_day_YYYYMMDD, holding the keys
// that expire that day. Once the day is over every row in it has expired, and the whole
// partition is dropped: no deletes, no dead tuples, no vacuum.

/** The name of the partition of keys expiring on `day` (YYYY-MM-DD, UTC). */
export function dayPartitionName(day: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new TypeError(`not a day: ${day}`)
  return `idem_keys_by_day_${day.replaceAll('-', '')}`
}

/** Today's date (UTC) on the server's clock, and its partitions. */
export function dayPartitions(schema: string): Statement {
  return {
    text:
      `SELECT to_char((now() AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS today, ` +
      `coalesce((SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_inherits AS i ` +
      `JOIN pg_class AS c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1) AND c.relname ~ '^idem_keys_by_day_[0-9]{8}$'), '{}') AS partitions`,
    values: [`${quoteSchema(schema)}.idem_keys_by_day`],
  }
}

/**
 * A bound on how long partition DDL waits for its lock (it needs the parent's, briefly):
 * behind a long transaction it gives up and the next prune tries again, instead of
 * queueing every claim behind it.
 */
export const PARTITION_LOCK_TIMEOUT = `SET LOCAL lock_timeout = '2s'`

/** Creates the partition of `day` (YYYY-MM-DD), if missing. */
export function createDayPartition(schema: string, day: string, next: string): string {
  const s = quoteSchema(schema)
  dayPartitionName(next)
  return (
    `CREATE TABLE IF NOT EXISTS ${s}."${dayPartitionName(day)}" PARTITION OF ${s}.idem_keys_by_day ` +
    `FOR VALUES FROM ('${day} 00:00:00+00') TO ('${next} 00:00:00+00')`
  )
}

/** Postgres's estimate of a partition's rows (what prune reports for a dropped one, without counting). */
export function partitionRows(schema: string, name: string): Statement {
  return { text: `SELECT greatest(reltuples, 0)::bigint AS rows FROM pg_class WHERE oid = to_regclass($1)`, values: [`${quoteSchema(schema)}."${name}"`] }
}

/** Drops a partition whose day is over. */
export function dropDayPartition(schema: string, name: string): string {
  if (!/^idem_keys_by_day_\d{8}$/.test(name)) throw new TypeError(`not a day partition: ${name}`)
  return `DROP TABLE IF EXISTS ${quoteSchema(schema)}."${name}"`
}
