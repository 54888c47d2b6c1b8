import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames, type KnownOptions } from '../../core/validate.js'
import type { KeyInspection, TableStats } from '../../ports/operator.js'
import { statusOf } from '../inspection.js'
import * as sql from './dialect/index.js'
import { literal, migrationPreamble, migrations, migrationsTable, pendingMigrations, SCHEMA_VERSION, versionRow } from './dialect/migrations.js'
import { classifyPgError } from './driver/errors.js'
import { queryOnPool } from './driver/pool-query.js'
import type { PgExecutor, PgPool } from './driver/types.js'

/** A pool (or client) to read through: `pg.Pool` fits. */
type PgReader = PgExecutor

/**
 * What the stores' `prune` and an operator (the `idem` command) do to a Postgres schema
 * beyond the ports: delete its expired rows, read its schema version, print the
 * migration SQL to apply by hand, read one key's records, counts and sizes.
 */

/**
 * Every statement that brings `schema` from version `from` to `SCHEMA_VERSION`, in one
 * transaction, recording each version in `idem_migrations` as `migrate()` does, so a
 * `migrate()` after the script has been applied by hand finds the schema current.
 * What `idem sql postgres` prints.
 * @throws TypeError when `schema` is not a plain identifier
 * @example
 * const sql = postgresMigrationScript('billing').map((s) => (s.startsWith('--') ? s : `${s};`)).join('\n') // for psql -f
 */
export function postgresMigrationScript(schema: string, from = 0): string[] {
  return [
    'BEGIN',
    ...migrationPreamble(schema),
    ...pendingMigrations(schema, from).flatMap(({ migration, statements }) => [`-- version ${migration.version}: ${migration.description}`, ...statements]),
    'COMMIT',
  ]
}

/** The version `migrate()` brought `schema` to: 0 when idem was never migrated there. */
export async function postgresSchemaVersion(pool: PgReader, schema: string): Promise<number> {
  const s = sql.quoteSchema(schema)
  try {
    const { rows } = await pool.query(`SELECT to_regclass(${literal(`${s}.idem_migrations`)}) IS NOT NULL AS present`)
    if (!(rows[0] as { present: boolean }).present) return 0
    const current = await pool.query(`SELECT coalesce(max(version), 0) AS version FROM ${s}.idem_migrations`)
    return Number((current.rows[0] as { version: number }).version)
  } catch (error) {
    throw classifyPgError(error, schema)
  }
}

/** idem's tables in `schema` that exist although no version is recorded: SQL applied by hand without its version rows. */
export async function postgresUnrecordedTables(pool: PgReader, schema: string): Promise<string[]> {
  const { rows } = await pool.query(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_name LIKE 'idem\\_%' AND table_name <> 'idem_migrations' ORDER BY 1`,
    [schema],
  )
  return (rows as { name: string }[]).map((row) => row.name)
}

export { SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION }

/**
 * The key rows of both layouts: `idem_keys` and, from migration 6 on, the daily
 * partitions of `idem_keys_by_day` (`keyLayout: 'daily-partitions'`), so the commands
 * below see every key whichever layout the store writes. A schema from before
 * migration 6 has only the first.
 */
async function keyRows(pool: PgReader, schema: string): Promise<{ from: string; bytes: string }> {
  const s = sql.quoteSchema(schema)
  const { rows } = await pool.query('SELECT to_regclass($1) IS NOT NULL AS partitioned', [`${s}.idem_keys_by_day`])
  const columns = 'scope, key, fingerprint, outcome, created_at, expires_at'
  if (!(rows[0] as { partitioned: boolean }).partitioned) return { from: `${s}.idem_keys`, bytes: `pg_total_relation_size(${literal(`${s}.idem_keys`)})` }
  return {
    from: `(SELECT ${columns} FROM ${s}.idem_keys UNION ALL SELECT ${columns} FROM ${s}.idem_keys_by_day) AS keys`,
    bytes:
      `pg_total_relation_size(${literal(`${s}.idem_keys`)}) + ` +
      `(SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree(${literal(`${s}.idem_keys_by_day`)}))`,
  }
}

/** Expired rows a prune would delete now (keys, inbox ids, leases). */
export async function postgresExpiredCount(pool: PgReader, schema: string): Promise<number> {
  const s = sql.quoteSchema(schema)
  try {
    const keys = await keyRows(pool, schema)
    const { rows } = await pool.query(
      `SELECT (SELECT count(*) FROM ${keys.from} WHERE expires_at <= now()) + (SELECT count(*) FROM ${s}.idem_inbox WHERE expires_at <= now()) + ` +
        `(SELECT count(*) FROM ${s}.idem_leases WHERE expires_at <= now()) AS n`,
    )
    return Number((rows[0] as { n: string }).n)
  } catch (error) {
    throw classifyPgError(error, schema)
  }
}

/** Reads `(scope, key)` from the key table and the leased tables. */
export async function postgresInspect(pool: PgReader, schema: string, scope: string, key: string): Promise<KeyInspection> {
  const s = sql.quoteSchema(schema)
  const iso = (value: Date | null): string | null => (value === null ? null : value.toISOString())
  try {
    const rows = await keyRows(pool, schema)
    const [now, keys, leases, steps] = await Promise.all([
      pool.query('SELECT now() AS now'),
      pool.query(
        `SELECT fingerprint, created_at, expires_at, expires_at <= now() AS expired, left(outcome, 20) AS head, octet_length(outcome) AS bytes
         FROM ${rows.from} WHERE scope = $1 AND key = $2 ORDER BY expires_at DESC LIMIT 1`,
        [scope, key],
      ),
      pool.query(
        `SELECT fingerprint, state, token::text AS token, lease_until, coalesce(lease_until > clock_timestamp(), false) AS lease_live,
                expires_at, expires_at <= now() AS expired, left(outcome, 20) AS head
         FROM ${s}.idem_leases WHERE scope = $1 AND key = $2`,
        [scope, key],
      ),
      pool.query(`SELECT name, created_at, token::text AS token FROM ${s}.idem_steps WHERE scope = $1 AND key = $2 ORDER BY created_at, name`, [scope, key]),
    ])
    const report: KeyInspection = { scope, key, now: (now.rows[0] as { now: Date }).now.toISOString() }
    const k = keys.rows[0] as { fingerprint: string; created_at: Date; expires_at: Date; expired: boolean; head: string; bytes: number } | undefined
    if (k !== undefined) {
      report.record = {
        fingerprint: k.fingerprint,
        createdAt: k.created_at.toISOString(),
        expiresAt: k.expires_at.toISOString(),
        expired: k.expired,
        status: statusOf(k.head),
        outcomeBytes: Number(k.bytes),
      }
    }
    const l = leases.rows[0] as
      | { fingerprint: string; state: 'held'; token: string; lease_until: Date | null; lease_live: boolean; expires_at: Date; expired: boolean; head: string | null }
      | undefined
    if (l !== undefined) {
      report.lease = {
        state: l.state,
        fingerprint: l.fingerprint,
        token: l.token,
        leaseUntil: iso(l.lease_until),
        leaseLive: l.state === 'held' && l.lease_live,
        expiresAt: l.expires_at.toISOString(),
        expired: l.expired,
        status: statusOf(l.head),
        steps: (steps.rows as { name: string; created_at: Date; token: string }[]).map((row) => ({ name: row.name, savedAt: row.created_at.toISOString(), token: row.token })),
      }
    }
    return report
  } catch (error) {
    throw classifyPgError(error, schema)
  }
}

/** Reads `TableStats` from a Postgres schema. It counts whole tables: run it off-peak on a large one. */
export async function postgresStats(pool: PgReader, schema: string, windowMs: number): Promise<TableStats> {
  const s = sql.quoteSchema(schema)
  const window = `now() - $1 * interval '1 millisecond'`
  const num = (value: unknown): number => Number(value)
  try {
    const rows = await keyRows(pool, schema)
    const [keys, byStatus, byDay, leases, inbox, outbox, dead] = await Promise.all([
      pool.query(
        `SELECT count(*) AS total, count(*) FILTER (WHERE expires_at > now()) AS live, count(*) FILTER (WHERE created_at > ${window}) AS recent,
                ${rows.bytes} AS bytes,
                pg_total_relation_size(${literal(`${s}.idem_leases`)}) + pg_total_relation_size(${literal(`${s}.idem_steps`)}) AS lease_bytes
         FROM ${rows.from}`,
        [windowMs],
      ),
      pool.query(
        `SELECT coalesce(substring(left(outcome, 20) from '^\\{"status":(\\d{3})[,}]'), 'other') AS status, count(*) AS n
         FROM ${rows.from} WHERE created_at > ${window} GROUP BY 1 ORDER BY 1`,
        [windowMs],
      ),
      pool.query(
        `SELECT to_char(date_trunc('day', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, count(*) AS n
         FROM ${rows.from} WHERE created_at > ${window} GROUP BY 1 ORDER BY 1`,
        [windowMs],
      ),
      pool.query(`SELECT state, count(*) AS n, count(*) FILTER (WHERE expires_at <= now()) AS expired FROM ${s}.idem_leases GROUP BY state`),
      pool.query(`SELECT count(*) FILTER (WHERE expires_at > now()) AS live, count(*) FILTER (WHERE expires_at <= now()) AS expired FROM ${s}.idem_inbox`),
      pool.query(
        `SELECT count(*) FILTER (WHERE delivered_at IS NULL) AS pending, count(*) FILTER (WHERE delivered_at IS NOT NULL) AS delivered,
                extract(epoch FROM now() - min(created_at) FILTER (WHERE delivered_at IS NULL)) * 1000 AS oldest
         FROM ${s}.idem_outbox`,
      ),
      pool.query(`SELECT count(*) AS total, count(*) FILTER (WHERE dead_at > ${window}) AS recent FROM ${s}.idem_dead_letters`, [windowMs]),
    ])
    const k = keys.rows[0] as Record<string, unknown>
    const byState: Record<string, number> = { held: 0, free: 0, completed: 0 }
    let leasesExpired = 0
    for (const row of leases.rows as { state: string; n: string; expired: string }[]) {
      byState[row.state] = num(row.n)
      leasesExpired += num(row.expired)
    }
    const o = outbox.rows[0] as Record<string, unknown>
    const i = inbox.rows[0] as Record<string, unknown>
    const d = dead.rows[0] as Record<string, unknown>
    const recent = num(k.recent)
    return {
      windowMs,
      keys: {
        total: num(k.total),
        live: num(k.live),
        expired: num(k.total) - num(k.live),
        recent,
        byStatus: Object.fromEntries((byStatus.rows as { status: string; n: string }[]).map((row) => [row.status, num(row.n)])),
        byDay: (byDay.rows as { day: string; n: string }[]).map((row) => ({ day: row.day, rows: num(row.n) })),
        rowsPerDay: recent / (windowMs / 86_400_000),
        bytes: num(k.bytes),
      },
      leases: { byState, expired: leasesExpired, bytes: num(k.lease_bytes) },
      inbox: { live: num(i.live), expired: num(i.expired) },
      outbox: { pending: num(o.pending), delivered: num(o.delivered), oldestPendingAgeMs: o.oldest === null ? null : Math.round(num(o.oldest)) },
      deadLetters: { total: num(d.total), recent: num(d.recent) },
    }
  } catch (error) {
    throw classifyPgError(error, schema)
  }
}

/**
 * Records versions 1 to `version` as applied without running them, for tables created
 * by hand (from an older `idem sql`, which did not record versions), so `migrate()`
 * applies only what comes after.
 */
export async function postgresBaseline(pool: PgReader, schema: string, version: number): Promise<void> {
  const statements = [migrationsTable(schema), ...migrations.filter((m) => m.version <= version).map((m) => versionRow(schema, m, { ifAbsent: true }))]
  try {
    // Several statements in one simple query run as one implicit transaction: all or none.
    await pool.query(statements.join(';\n'))
  } catch (error) {
    throw classifyPgError(error, schema)
  }
}

/** Every option of `PruneOptions`; a store without an outbox takes `LEASED_PRUNE_OPTIONS`. */
export const PRUNE_OPTIONS = optionNames<PruneOptions>({ batchSize: true, deliveredOutboxOlderThanMs: true, onBatch: true })
/** The options of a leased store's `prune`, which has no outbox rows to delete. */
export const LEASED_PRUNE_OPTIONS = optionNames<Omit<PruneOptions, 'deliveredOutboxOlderThanMs'>>({ batchSize: true, onBatch: true })

/**
 * Deletes the expired rows of `tables` in batches of `batchSize`, each its own short
 * statement (rows locked by a running call are skipped), until none are left.
 * @param known the options the store's `prune` takes
 * @returns how many rows were deleted
 */
export async function pruneExpired(
  pool: PgPool,
  schema: string,
  tables: readonly sql.ExpiringTable[],
  options: PruneOptions = {},
  known: KnownOptions = PRUNE_OPTIONS,
): Promise<number> {
  assertKnownOptions('prune', options, known)
  const { batchSize = 1_000, deliveredOutboxOlderThanMs, onBatch } = options
  assertCount('prune: option "batchSize"', batchSize, 1)
  if (onBatch !== undefined && typeof onBatch !== 'function') throw new InvalidOptionError('prune: option "onBatch" must be a function (deleted) => void')
  if (deliveredOutboxOlderThanMs !== undefined) assertDuration('prune: option "deliveredOutboxOlderThanMs"', deliveredOutboxOlderThanMs, 0)
  const statements = tables.map((table) => () => sql.prune(schema, batchSize, table))
  if (deliveredOutboxOlderThanMs !== undefined) statements.push(() => sql.outboxPrune(schema, deliveredOutboxOlderThanMs, batchSize))
  let deleted = 0
  for (const statement of statements) {
    for (;;) {
      const { rowCount } = await queryOnPool(pool, schema, statement())
      deleted += rowCount ?? 0
      onBatch?.(rowCount ?? 0)
      if ((rowCount ?? 0) < batchSize) break
    }
  }
  return deleted
}

export interface PruneOptions {
  /** Rows deleted per statement. @default 1000 */
  batchSize?: number
  /**
   * Also delete outbox rows delivered more than this long ago. Delivered rows are kept
   * so that adding the same `(topic, dedupeKey)` again stays a no-op: keep them at
   * least as long as a producer may repeat an effect. @default kept
   */
  deliveredOutboxOlderThanMs?: number
  /** Called after each batch with how many rows it deleted: progress for a long prune. */
  onBatch?: (deleted: number) => void
}
