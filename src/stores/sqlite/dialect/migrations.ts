import type { MigrationStatements } from '../../sql/dialect.js'
import { migrationScript } from '../../sql/migrations.js'

/** One schema change, as data: applied in order, each once, in one transaction. */
export interface SqliteMigration {
  version: number
  description: string
  up: string[]
}

/** The schema version this build of idem expects (recorded in `idem_migrations`). */
export const SQLITE_SCHEMA_VERSION = 4

/** The versioned SQLite migrations, oldest first. */
export const sqliteMigrations: readonly SqliteMigration[] = [
  {
    version: 1,
    description: 'idem_keys',
    up: [
      `CREATE TABLE idem_keys (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  outcome TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) WITHOUT ROWID`,
      // No index on expires_at: each index is one more page written per commit
      // (measured: +14 µs per fresh call). Pruning scans in bounded windows instead.
    ],
  },
  {
    version: 2,
    description: 'idem_once, the first-time gate of once()',
    up: [
      `CREATE TABLE idem_once (
  kind TEXT NOT NULL,
  subject TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (kind, subject)
) WITHOUT ROWID`,
    ],
  },
  {
    version: 3,
    description: 'idem_outbox, idem_dead_letters and idem_inbox_attempts for idem/queue',
    up: [
      // Times are Unix milliseconds. A claim leases rows by pushing next_attempt_at
      // past the lease, so due rows are "undelivered and next_attempt_at <= now".
      `CREATE TABLE idem_outbox (
  id INTEGER PRIMARY KEY,
  topic TEXT NOT NULL,
  dedupe_key TEXT NOT NULL,
  payload TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  locked_until INTEGER,
  locked_by TEXT,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  delivered_at INTEGER,
  UNIQUE (topic, dedupe_key)
)`,
      'CREATE INDEX idem_outbox_due ON idem_outbox (next_attempt_at) WHERE delivered_at IS NULL',
      `CREATE TABLE idem_dead_letters (
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL CHECK (source IN ('inbox', 'outbox')),
  name TEXT NOT NULL,
  message_key TEXT NOT NULL,
  payload TEXT,
  attempts INTEGER NOT NULL,
  last_error TEXT NOT NULL,
  first_seen_at INTEGER NOT NULL,
  dead_at INTEGER NOT NULL
)`,
      `CREATE TABLE idem_inbox_attempts (
  consumer TEXT NOT NULL,
  message_key TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  last_error TEXT NOT NULL,
  first_failed_at INTEGER NOT NULL,
  last_failed_at INTEGER NOT NULL,
  PRIMARY KEY (consumer, message_key)
) WITHOUT ROWID`,
    ],
  },
  {
    version: 4,
    description: 'idem_leases and idem_steps for leased mode',
    up: [
      // Times are Unix milliseconds; tokens are microseconds-seeded counters.
      `CREATE TABLE idem_leases (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('held', 'free', 'completed')),
  token INTEGER NOT NULL,
  lease_until INTEGER,
  outcome TEXT,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) WITHOUT ROWID`,
      // Each step is written by its own statement (its own transaction), so it
      // survives whatever the holder rolls back later.
      `CREATE TABLE idem_steps (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  name TEXT NOT NULL,
  result TEXT NOT NULL,
  token INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key, name)
) WITHOUT ROWID`,
    ],
  },
]

// The plan below is the one way migrations are applied: the store's `migrate()` runs it
// (the protocol's migrationPlan), `sqliteMigrationScript` prints it for `sqlite3`, and
// the baseline records its versions.

/** `idem_migrations`, where each applied version is recorded. */
export const SQLITE_MIGRATIONS_TABLE =
  'CREATE TABLE IF NOT EXISTS idem_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at INTEGER NOT NULL)'

// Now in epoch milliseconds by SQLite's own clock, on every SQLite version the drivers bundle.
const NOW_MS = 'CAST((julianday(\'now\') - 2440587.5) * 86400000 AS INTEGER)'

/** The row recording `migration` as applied; `ifAbsent` leaves a recorded one alone (a baseline). */
export function sqliteVersionRow(migration: SqliteMigration, { ifAbsent = false } = {}): string {
  const description = `'${migration.description.replace(/'/g, "''")}'`
  return `INSERT INTO idem_migrations (version, description, applied_at) VALUES (${migration.version}, ${description}, ${NOW_MS})${ifAbsent ? ' ON CONFLICT (version) DO NOTHING' : ''}`
}

/** Each version after `from`, oldest first, with the statements that apply it and then record it. */
export function pendingSqliteMigrations(from: number): { migration: SqliteMigration; statements: string[] }[] {
  return sqliteMigrations.filter((migration) => migration.version > from).map((migration) => ({ migration, statements: [...migration.up, sqliteVersionRow(migration)] }))
}

/** The migrations as the protocol applies them (src/stores/sql/migrations.ts). */
export const migrationStatements: MigrationStatements = {
  latest: SQLITE_SCHEMA_VERSION,
  begin: 'BEGIN IMMEDIATE',
  end: 'COMMIT',
  preamble: [SQLITE_MIGRATIONS_TABLE],
  current: 'SELECT coalesce(max(version), 0) AS version FROM idem_migrations',
  pending: pendingSqliteMigrations,
  baseline: (version) => [SQLITE_MIGRATIONS_TABLE, ...sqliteMigrations.filter((m) => m.version <= version).map((m) => sqliteVersionRow(m, { ifAbsent: true }))],
}

/**
 * Every statement that brings the database from version `from` to the current one, in
 * one transaction, recording each version in `idem_migrations` as `migrate()` does, so
 * a `migrate()` after the script has been applied by hand finds the database current.
 * What `idem sql sqlite` prints.
 * @example
 * const upgrade = sqliteMigrationScript(3) // from version 3 to SQLITE_SCHEMA_VERSION
 */
export function sqliteMigrationScript(from = 0): string[] {
  return migrationScript(migrationStatements, from)
}
