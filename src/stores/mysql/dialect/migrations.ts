import type { MigrationStatements } from '../../sql/dialect.js'
import { migrationScript } from '../../sql/migrations.js'
import { claimProcedure, inboxClaimProcedure, keysClaimProcedure, keysOpenProcedure, keysRecordProcedure, lockProcedure } from './claim.js'
import { inboxFailureProcedure, inboxTakeFailuresProcedure } from './inbox.js'

/** One schema change, as data: applied in order, each once. */
export interface MysqlMigration {
  version: number
  description: string
  up: string[]
}

/** The schema version this build of idem expects (recorded in `idem_migrations`). */
export const MYSQL_SCHEMA_VERSION = 1

// Identities (scopes, keys, message ids, topics, dedupe keys, kinds, subjects) are
// VARBINARY: their UTF-8 bytes compared byte for byte, with no collation to fold case
// or accents and no PAD SPACE to make 'a' and 'a ' one key (MariaDB's and MySQL 5.7's
// utf8mb4_bin pad; no-pad binary collations have a different name on each server).
// Text read back (fingerprints, outcomes, payloads, errors) is utf8mb4_bin. Times are
// epoch milliseconds of idem's clock (BIGINT), as on SQLite.
const TABLE_OPTIONS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
const IDENTITY = 'VARBINARY(1024) NOT NULL'

/** Every table's and routine's text, version 1: created if missing, so a migration cut short runs again. */
const version1: string[] = [
  // The key table: a row per key, its record, or a placeholder (fingerprint '') while a
  // claim holds its lock (claim.ts). Keys of scope `inbox:<consumer>` are the inbox's ids.
  `CREATE TABLE IF NOT EXISTS idem_keys (
  scope ${IDENTITY},
  \`key\` ${IDENTITY},
  fingerprint TEXT NOT NULL,
  outcome LONGTEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (scope, \`key\`),
  KEY idem_keys_expires_at (expires_at)
) ${TABLE_OPTIONS}`,
  `CREATE TABLE IF NOT EXISTS idem_once (
  kind ${IDENTITY},
  subject ${IDENTITY},
  created_at BIGINT NOT NULL,
  PRIMARY KEY (kind, subject)
) ${TABLE_OPTIONS}`,
  // A claim leases rows by pushing next_attempt_at past the lease; lease_id names the
  // claim call that took them, so it reads back its own rows and no others.
  `CREATE TABLE IF NOT EXISTS idem_outbox (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  topic ${IDENTITY},
  dedupe_key ${IDENTITY},
  payload LONGTEXT NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  locked_until BIGINT NULL,
  locked_by VARBINARY(255) NULL,
  lease_id BINARY(16) NULL,
  last_error TEXT NULL,
  created_at BIGINT NOT NULL,
  delivered_at BIGINT NULL,
  UNIQUE KEY idem_outbox_dedupe (topic, dedupe_key),
  KEY idem_outbox_due (delivered_at, next_attempt_at),
  KEY idem_outbox_lease (lease_id)
) ${TABLE_OPTIONS}`,
  `CREATE TABLE IF NOT EXISTS idem_dead_letters (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  source VARCHAR(6) NOT NULL,
  name ${IDENTITY},
  message_key ${IDENTITY},
  payload LONGTEXT NULL,
  attempts INT NOT NULL,
  last_error TEXT NOT NULL,
  first_seen_at BIGINT NOT NULL,
  dead_at BIGINT NOT NULL,
  KEY idem_dead_letters_name (source, name, dead_at),
  CONSTRAINT idem_dead_letters_source CHECK (source IN ('inbox', 'outbox'))
) ${TABLE_OPTIONS}`,
  `CREATE TABLE IF NOT EXISTS idem_inbox_attempts (
  consumer ${IDENTITY},
  message_key ${IDENTITY},
  attempts INT NOT NULL,
  last_error TEXT NOT NULL,
  first_failed_at BIGINT NOT NULL,
  last_failed_at BIGINT NOT NULL,
  PRIMARY KEY (consumer, message_key)
) ${TABLE_OPTIONS}`,
  ...replaced('idem_lock', lockProcedure),
  ...replaced('idem_claim', claimProcedure),
  ...replaced('idem_keys_claim', keysClaimProcedure),
  ...replaced('idem_keys_open', keysOpenProcedure),
  ...replaced('idem_keys_record', keysRecordProcedure),
  ...replaced('idem_inbox_claim', inboxClaimProcedure),
  ...replaced('idem_inbox_failure', inboxFailureProcedure),
  ...replaced('idem_inbox_take_failures', inboxTakeFailuresProcedure),
]

/** A routine dropped and created again: what re-running a cut-short migration needs. */
function replaced(name: string, text: string): string[] {
  return [`DROP PROCEDURE IF EXISTS ${name}`, text]
}

/** The versioned MySQL migrations, oldest first. */
export const mysqlMigrations: readonly MysqlMigration[] = [
  { version: 1, description: 'idem_keys with its claim routines, idem_once, idem_outbox, idem_dead_letters, idem_inbox_attempts', up: version1 },
]

/** `idem_migrations`, where each applied version is recorded. */
export const MYSQL_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS idem_migrations (version INT NOT NULL PRIMARY KEY, description TEXT NOT NULL, applied_at BIGINT NOT NULL) ${TABLE_OPTIONS}`

const NOW_MS = 'CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)'

function versionRow(migration: MysqlMigration, { ifAbsent = false } = {}): string {
  const description = `'${migration.description.replace(/'/g, "''")}'`
  return `INSERT ${ifAbsent ? 'IGNORE ' : ''}INTO idem_migrations (version, description, applied_at) VALUES (${migration.version}, ${description}, ${NOW_MS})`
}

// MySQL commits DDL as it runs it, so a migration is no transaction: concurrent runs take
// turns on a named lock of the database instead, and every statement can run again. A
// lock not taken in 60 s fails the statement (the subquery's two rows), not silently.
const LOCK = "CONCAT('idem_migrate:', DATABASE())"
const STRICT = "'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"

/** The migrations as the protocol applies them (src/stores/sql/migrations.ts). */
export const migrationStatements: MigrationStatements = {
  latest: MYSQL_SCHEMA_VERSION,
  begin: `SELECT IF(GET_LOCK(${LOCK}, 60) = 1, 1, (SELECT 1 UNION SELECT 2)) AS locked`,
  // The routines keep the sql_mode they were created under: strict, so a too-long
  // identity is an error, never truncated into another one.
  preamble: [`SET @idem_sql_mode = @@SESSION.sql_mode, SESSION sql_mode = ${STRICT}`, MYSQL_MIGRATIONS_TABLE],
  current: 'SELECT COALESCE(MAX(version), 0) AS version FROM idem_migrations',
  end: `SET SESSION sql_mode = @idem_sql_mode, @idem_released = RELEASE_LOCK(${LOCK})`,
  pending: (from) => mysqlMigrations.filter((m) => m.version > from).map((migration) => ({ migration, statements: [...migration.up, versionRow(migration)] })),
  baseline: (version) => [MYSQL_MIGRATIONS_TABLE, ...mysqlMigrations.filter((m) => m.version <= version).map((m) => versionRow(m, { ifAbsent: true }))],
}

/**
 * Every statement that brings the database from version `from` to the current one, as
 * `migrate()` runs them (each routine's text is one statement: in the `mysql` client,
 * set a `DELIMITER` other than `;` first).
 * @example
 * const statements = mysqlMigrationScript() // from an empty database to MYSQL_SCHEMA_VERSION
 */
export function mysqlMigrationScript(from = 0): string[] {
  return migrationScript(migrationStatements, from)
}
