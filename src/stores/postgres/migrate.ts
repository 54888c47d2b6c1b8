import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { assertKnownOptions, optionNames } from '../../core/validate.js'
import { classifyPgError } from './driver/errors.js'
import { checkOut } from './driver/held-client.js'
import { quoteSchema } from './dialect/index.js'
import { migrationPreamble, pendingMigrations, SCHEMA_VERSION } from './dialect/migrations.js'
import type { PgPool } from './driver/types.js'

/** What `migratePostgres` did: the version it found, the version now, and the migrations it applied. */
export interface MigrateResult {
  from: number
  to: number
  applied: number[]
}

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
  const s = quoteSchema(schema)
  const client = await checkOut(pool, schema)
  let failure: unknown
  try {
    await client.query('BEGIN')
    for (const statement of migrationPreamble(schema)) await client.query(statement)
    const { rows } = await client.query(`SELECT coalesce(max(version), 0) AS version FROM ${s}.idem_migrations`)
    const from = Number((rows[0] as { version: number }).version)
    if (from > SCHEMA_VERSION) {
      throw new Error(`idem: schema ${schema} is at version ${from}, newer than this idem (${SCHEMA_VERSION}); upgrade idem`)
    }
    const applied: number[] = []
    for (const { migration, statements } of pendingMigrations(schema, from)) {
      for (const statement of statements) await client.query(statement)
      applied.push(migration.version)
    }
    await client.query('COMMIT')
    return { from, to: SCHEMA_VERSION, applied }
  } catch (error) {
    // A connection that cannot even roll back is destroyed rather than returned.
    failure = client.lost ?? (await client.query('ROLLBACK').then(() => undefined, (rollbackError: unknown) => rollbackError))
    const classified = classifyPgError(error, schema)
    throw classified instanceof StoreUnavailableError ? classified : error
  } finally {
    client.release(failure)
  }
}
