import { keyClaims, keysByDayTable, keysTable } from './migrations/keys.js'
import { leaseTables } from './migrations/leases.js'
import { inboxTable, onceTable, queueTables } from './migrations/queue.js'
import type { MigrationStatements } from '../../sql/dialect.js'
import type { Migration } from './migrations/migration.js'
import { quoteSchema } from './statement.js'

export type { Migration } from './migrations/migration.js'

/** The schema version this build of idem expects. */
export const SCHEMA_VERSION = 7

/**
 * The versioned Postgres migrations, oldest first: what `migratePostgres` applies and
 * `idem migrate --dry-run` and `idem sql postgres` print. Each is data in the file of its
 * tables (migrations/).
 */
export const migrations: readonly Migration[] = [
  keysTable,
  onceTable,
  queueTables,
  leaseTables,
  inboxTable,
  keysByDayTable,
  keyClaims,
]

// The plan below is the one way migrations are applied: `migratePostgres` runs it (the
// protocol's migrationPlan), `postgresMigrationScript` prints it for `psql`, and the
// baseline records its versions.

/** The migrations of `schema` as the protocol applies them (src/stores/sql/migrations.ts). */
export function migrationStatements(schema: string): MigrationStatements {
  const s = quoteSchema(schema)
  return {
    latest: SCHEMA_VERSION,
    begin: 'BEGIN',
    end: 'COMMIT',
    preamble: migrationPreamble(schema),
    current: `SELECT coalesce(max(version), 0) AS version FROM ${s}.idem_migrations`,
    pending: (from) => pendingMigrations(schema, from),
    baseline: (version) => [migrationsTable(schema), ...migrations.filter((m) => m.version <= version).map((m) => versionRow(schema, m, { ifAbsent: true }))],
  }
}

/** `text` as a standard SQL string literal (quotes doubled), for statements printed whole. */
export const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`

/**
 * The statements every migration of `schema` starts its transaction with: the advisory
 * lock that makes concurrent runs take turns, the schema, and the version table.
 */
export function migrationPreamble(schema: string): string[] {
  const s = quoteSchema(schema)
  return [
    `SELECT pg_advisory_xact_lock(hashtextextended(${literal(`idem:migrate:${schema}`)}, 0))`,
    `CREATE SCHEMA IF NOT EXISTS ${s}`,
    migrationsTable(schema),
  ]
}

/** `idem_migrations`, where each applied version is recorded. */
export function migrationsTable(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteSchema(schema)}.idem_migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
}

/** The row recording `migration` as applied; `ifAbsent` leaves a recorded one alone (a baseline). */
export function versionRow(schema: string, migration: Migration, { ifAbsent = false } = {}): string {
  return `INSERT INTO ${quoteSchema(schema)}.idem_migrations (version, description) VALUES (${migration.version}, ${literal(migration.description)})${ifAbsent ? ' ON CONFLICT (version) DO NOTHING' : ''}`
}

/** Each version after `from`, oldest first, with the statements that apply it and then record it. */
export function pendingMigrations(schema: string, from: number): { migration: Migration; statements: string[] }[] {
  return migrations.filter((migration) => migration.version > from).map((migration) => ({ migration, statements: [...migration.up(schema), versionRow(schema, migration)] }))
}
