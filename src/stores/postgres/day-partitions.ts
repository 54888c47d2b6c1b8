import { classifyPgError } from './driver/errors.js'
import { checkOut } from './driver/held-client.js'
import { queryOnPool } from './driver/pool-query.js'
import * as sql from './dialect/index.js'
import type { PgPool } from './driver/types.js'

/**
 * Enough for the default retention (24 h) and a couple of days without a prune. Keys
 * that expire later land in the DEFAULT partition, which prune empties by deletes.
 */
export const DEFAULT_PARTITION_DAYS_AHEAD = 3

/**
 * Keeps `idem_keys_by_day`'s partitions: every day from today to `daysAhead` days
 * from today (UTC, the server's clock) exists, and every partition whose day is over
 * (all its keys expired) is dropped. Each DDL runs in a short transaction of its own
 * with a lock timeout, so it never queues claims behind a long transaction; one that
 * times out is left for the next run.
 * @returns the partitions created and dropped, and Postgres's estimate of the rows dropped
 */
export async function maintainDayPartitions(
  pool: PgPool,
  schema: string,
  { daysAhead, drop }: { daysAhead: number; drop: boolean },
): Promise<{ created: string[]; dropped: string[]; droppedRows: number }> {
  const { rows } = await queryOnPool(pool, schema, sql.dayPartitions(schema))
  const { today, partitions } = rows[0] as { today: string; partitions: string[] }
  const existing = new Set(partitions)
  const created: string[] = []
  const dropped: string[] = []
  let droppedRows = 0
  for (let offset = 0; offset <= daysAhead; offset++) {
    const day = addDays(today, offset)
    if (existing.has(sql.dayPartitionName(day))) continue
    if (await ddl(pool, schema, sql.createDayPartition(schema, day, addDays(day, 1)))) created.push(sql.dayPartitionName(day))
  }
  if (drop) {
    // A partition holds the keys expiring on its day: once that day is over, all are expired.
    const todays = sql.dayPartitionName(today)
    for (const name of partitions) {
      if (!/^idem_keys_by_day_\d{8}$/.test(name) || name >= todays) continue
      const estimate = Number(((await queryOnPool(pool, schema, sql.partitionRows(schema, name))).rows[0] as { rows?: string } | undefined)?.rows ?? 0)
      if (await ddl(pool, schema, sql.dropDayPartition(schema, name))) {
        dropped.push(name)
        droppedRows += estimate
      }
    }
  }
  return { created, dropped, droppedRows }
}

/** One DDL statement in a transaction of its own, under a lock timeout; false when the lock was not to be had. */
async function ddl(pool: PgPool, schema: string, statement: string): Promise<boolean> {
  const client = await checkOut(pool, schema)
  let failure: unknown
  try {
    await client.query(`BEGIN; ${sql.PARTITION_LOCK_TIMEOUT}; ${statement}; COMMIT`)
    return true
  } catch (error) {
    failure = client.lost ?? (await client.query('ROLLBACK').then(() => undefined, (e: unknown) => e))
    // lock_not_available, or (23514) the DEFAULT partition holds keys of that day already:
    // they stay there and expire by deletes; the day is tried again at the next prune.
    const code = (error as { code?: string }).code
    if (code === '55P03' || code === '23514') return false
    throw classifyPgError(error, schema)
  } finally {
    client.release(failure)
  }
}

function addDays(day: string, days: number): string {
  const date = new Date(`${day}T00:00:00Z`)
  date.setUTCDate(date.getUTCDate() + days)
  return date.toISOString().slice(0, 10)
}
