import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import { migrationPlan, migrationScript, type MigrateResult } from '../sql/migrations.js'
import { migrationStatements } from './dialect/migrations.js'
import { postgresDriver } from './driver/store-driver.js'
import type { PgPool } from './driver/types.js'

export type { MigrateResult } from '../sql/migrations.js'

const OPTIONS = optionNames<{ schema?: string }>({ schema: true })

/**
 * Brings the schema's idem tables to `SCHEMA_VERSION`. Runs in one transaction under
 * an advisory lock, so two instances starting at once migrate once: the statements
 * `postgresMigrationScript` prints, run here. Refuses a schema newer than this build
 * knows.
 * @param options.schema the schema holding idem's tables, default `public`
 * @throws StoreUnavailableError when Postgres cannot be reached or the connection is lost midway; running it again is safe
 * @example
 * await migratePostgres(pool, { schema: 'billing' }) // at deploy time, before the app serves
 */
export async function migratePostgres(pool: PgPool, options: { schema?: string } = {}): Promise<MigrateResult> {
  assertKnownOptions('migratePostgres', options, OPTIONS)
  const { schema = 'public' } = options
  return postgresDriver(pool, schema).migrate(migrationPlan(migrationStatements(schema), `schema ${schema}`))
}

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
  return migrationScript(migrationStatements(schema), from)
}
