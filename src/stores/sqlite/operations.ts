import type { KeyInspection, TableStats } from '../../ports/operator.js'
import { statusOf } from '../inspection.js'
import { firstRow } from './connection.js'
import { pendingSqliteMigrations, SQLITE_MIGRATIONS_TABLE, sqliteMigrations, SQLITE_SCHEMA_VERSION, sqliteVersionRow } from './migrations.js'
import type { SqliteDatabase } from '../../ports/sql-clients.js'

/**
 * What an operator (the `idem` command) asks of a SQLite database beyond the ports: its
 * schema version, the migration SQL to apply by hand, one key's records, counts and
 * sizes. The shapes are those of the Postgres store's `operations.ts`.
 */

/**
 * Every statement that brings the database from version `from` to the current one, in
 * one transaction, recording each version in `idem_migrations` as `migrate()` does, so
 * a `migrate()` after the script has been applied by hand finds the database current.
 * What `idem sql sqlite` prints.
 * @example
 * const upgrade = sqliteMigrationScript(3) // from version 3 to SQLITE_SCHEMA_VERSION
 */
export function sqliteMigrationScript(from = 0): string[] {
  return [
    'BEGIN IMMEDIATE',
    SQLITE_MIGRATIONS_TABLE,
    ...pendingSqliteMigrations(from).flatMap(({ migration, statements }) => [`-- version ${migration.version}: ${migration.description}`, ...statements]),
    'COMMIT',
  ]
}

export { SQLITE_SCHEMA_VERSION }

const hasTable = (db: SqliteDatabase, name: string): boolean =>
  firstRow(db.prepare("SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = ?"), name) !== undefined

/** The version `migrate()` brought the database to: 0 when idem was never migrated there. */
export function sqliteSchemaVersion(db: SqliteDatabase): number {
  if (!hasTable(db, 'idem_migrations')) return 0
  return firstRow<{ v: number }>(db.prepare('SELECT coalesce(max(version), 0) AS v FROM idem_migrations'))!.v
}

/** idem's tables that exist although no version is recorded: SQL applied by hand without its version rows. */
export function sqliteUnrecordedTables(db: SqliteDatabase): string[] {
  return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'idem\\_%' ESCAPE '\\' AND name <> 'idem_migrations' ORDER BY 1").all() as { name: string }[]).map(
    (row) => row.name,
  )
}

/** Expired rows a prune would delete now (keys and leases). */
export function sqliteExpiredCount(db: SqliteDatabase): number {
  const now = Date.now()
  const keys = (db.prepare('SELECT count(*) AS n FROM idem_keys WHERE expires_at <= ?').get(now) as { n: number }).n
  const leases = hasTable(db, 'idem_leases') ? (db.prepare('SELECT count(*) AS n FROM idem_leases WHERE expires_at <= ?').get(now) as { n: number }).n : 0
  return keys + leases
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

/** Reads `(scope, key)` from the key table and the leased tables. */
export function sqliteInspect(db: SqliteDatabase, scope: string, key: string): KeyInspection {
  const now = Date.now()
  const report: KeyInspection = { scope, key, now: new Date(now).toISOString() }
  const k = firstRow<{ fingerprint: string; created_at: number; expires_at: number; head: string; bytes: number }>(
    db.prepare('SELECT fingerprint, created_at, expires_at, substr(outcome, 1, 20) AS head, length(CAST(outcome AS BLOB)) AS bytes FROM idem_keys WHERE scope = ? AND key = ?'),
    scope,
    key,
  )
  if (k !== undefined) {
    report.record = {
      fingerprint: k.fingerprint,
      createdAt: iso(k.created_at)!,
      expiresAt: iso(k.expires_at)!,
      expired: k.expires_at <= now,
      status: statusOf(k.head),
      outcomeBytes: k.bytes,
    }
  }
  if (hasTable(db, 'idem_leases')) {
    const l = firstRow<{ fingerprint: string; state: 'held'; token: number; lease_until: number | null; expires_at: number; head: string | null }>(
      db.prepare('SELECT fingerprint, state, token, lease_until, expires_at, substr(outcome, 1, 20) AS head FROM idem_leases WHERE scope = ? AND key = ?'),
      scope,
      key,
    )
    if (l !== undefined) {
      const steps = db.prepare('SELECT name, created_at, token FROM idem_steps WHERE scope = ? AND key = ? ORDER BY created_at, name').all(scope, key) as {
        name: string
        created_at: number
        token: number
      }[]
      report.lease = {
        state: l.state,
        fingerprint: l.fingerprint,
        token: String(l.token),
        leaseUntil: iso(l.lease_until),
        leaseLive: l.state === 'held' && l.lease_until !== null && l.lease_until > now,
        expiresAt: iso(l.expires_at)!,
        expired: l.expires_at <= now,
        status: statusOf(l.head),
        steps: steps.map((row) => ({ name: row.name, savedAt: iso(row.created_at)!, token: String(row.token) })),
      }
    }
  }
  return report
}

/** Counts and sizes of idem's tables (the Postgres `TableStats` shape). */
export function sqliteStats(db: SqliteDatabase, windowMs: number): TableStats {
  const now = Date.now()
  const since = now - windowMs
  const get = (text: string, ...values: unknown[]) => db.prepare(text).get(...values) as Record<string, number | null>
  const k = get('SELECT count(*) AS total, coalesce(sum(expires_at > ?), 0) AS live, coalesce(sum(created_at > ?), 0) AS recent FROM idem_keys', now, since)
  const byStatus = db
    .prepare(
      `SELECT CASE WHEN substr(outcome, 1, 10) = '{"status":' AND substr(outcome, 14, 1) IN (',', '}') THEN substr(outcome, 11, 3) ELSE 'other' END AS status, count(*) AS n
       FROM idem_keys WHERE created_at > ? GROUP BY 1 ORDER BY 1`,
    )
    .all(since) as { status: string; n: number }[]
  const byDay = db
    .prepare("SELECT strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') AS day, count(*) AS n FROM idem_keys WHERE created_at > ? GROUP BY 1 ORDER BY 1")
    .all(since) as { day: string; n: number }[]
  const size = (...names: string[]): number | null => {
    try {
      return (db.prepare(`SELECT coalesce(sum(pgsize), 0) AS bytes FROM dbstat WHERE name IN (${names.map(() => '?').join(', ')})`).get(...names) as { bytes: number }).bytes
    } catch {
      return null // SQLite built without the dbstat table
    }
  }
  const byState: Record<string, number> = { held: 0, free: 0, completed: 0 }
  let leasesExpired = 0
  if (hasTable(db, 'idem_leases')) {
    for (const row of db.prepare('SELECT state, count(*) AS n, coalesce(sum(expires_at <= ?), 0) AS expired FROM idem_leases GROUP BY state').all(now) as {
      state: string
      n: number
      expired: number
    }[]) {
      byState[row.state] = row.n
      leasesExpired += row.expired
    }
  }
  const queue = hasTable(db, 'idem_outbox')
  const o = queue
    ? get('SELECT coalesce(sum(delivered_at IS NULL), 0) AS pending, coalesce(sum(delivered_at IS NOT NULL), 0) AS delivered, min(CASE WHEN delivered_at IS NULL THEN created_at END) AS oldest FROM idem_outbox')
    : { pending: 0, delivered: 0, oldest: null }
  const d = queue ? get('SELECT count(*) AS total, coalesce(sum(dead_at > ?), 0) AS recent FROM idem_dead_letters', since) : { total: 0, recent: 0 }
  const recent = Number(k.recent)
  return {
    windowMs,
    keys: {
      total: Number(k.total),
      live: Number(k.live),
      expired: Number(k.total) - Number(k.live),
      recent,
      byStatus: Object.fromEntries(byStatus.map((row) => [row.status, row.n])),
      byDay: byDay.map((row) => ({ day: row.day, rows: row.n })),
      rowsPerDay: recent / (windowMs / 86_400_000),
      bytes: size('idem_keys'),
    },
    leases: { byState, expired: leasesExpired, bytes: size('idem_leases', 'idem_steps') },
    // SQLite keeps inbox ids in idem_keys (scope inbox:<consumer>), counted with the keys.
    inbox: { live: Number(get("SELECT count(*) AS n FROM idem_keys WHERE scope LIKE 'inbox:%' AND expires_at > ?", now).n), expired: Number(get("SELECT count(*) AS n FROM idem_keys WHERE scope LIKE 'inbox:%' AND expires_at <= ?", now).n) },
    outbox: { pending: Number(o.pending), delivered: Number(o.delivered), oldestPendingAgeMs: o.oldest == null ? null : now - Number(o.oldest) },
    deadLetters: { total: Number(d.total), recent: Number(d.recent) },
  }
}

/** Records versions 1 to `version` as applied without running them (see the Postgres `postgresBaseline`). */
export function sqliteBaseline(db: SqliteDatabase, version: number): void {
  db.exec(SQLITE_MIGRATIONS_TABLE)
  for (const migration of sqliteMigrations) if (migration.version <= version) db.exec(sqliteVersionRow(migration, { ifAbsent: true }))
}
