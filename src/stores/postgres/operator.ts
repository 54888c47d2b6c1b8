import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { StoreOperator } from '../../ports/operator.js'
import { migrationOperator } from '../sql/migrations.js'
import { operatorReads, sqlUninstall } from '../sql/operator.js'
import { postgresDialect } from './dialect/data-dialect.js'
import { migrationStatements } from './dialect/migrations.js'
import { operatorStatements } from './dialect/operator.js'
import { postgresDriver } from './driver/store-driver.js'
import { leasedPostgresStore } from './leased.js'
import { postgresStore, type PostgresStoreOptions } from './store.js'
import type { PgExecutor, PgPool } from './driver/types.js'

/** What `postgresOperator` takes: the pool, the schema, and the key table's layout. */
export interface PostgresOperatorOptions {
  /** A `pg.Pool` (or anything with the same `connect()` and `query()`). */
  pool: PgPool & PgExecutor
  /** Schema holding idem's tables. @default 'public' */
  schema?: string
  /** The key table's layout, as the store's (`postgresStore`'s `keyLayout`): what `migrate` creates and `prune` drops. @default 'table' */
  keyLayout?: PostgresStoreOptions['keyLayout']
}

const OPTIONS = optionNames<PostgresOperatorOptions>({ pool: true, schema: true, keyLayout: true })

/**
 * The operator of a Postgres schema: one key's records, counts and sizes, expired
 * records and their pruning (keys, inbox ids, leases; delivered outbox rows on request),
 * its versioned migrations, and its SQL dialect on the pool. What `idem stats|inspect|prune|migrate|reconcile --postgres` run.
 * @example
 * const operator = postgresOperator({ pool, schema: 'idem' })
 * const { keys } = await operator.stats(86_400_000)
 * await operator.prune({ batchSize: 5_000 })
 */
export function postgresOperator(options: PostgresOperatorOptions): StoreOperator & Required<Pick<StoreOperator, 'stats' | 'expiredCount' | 'prune' | 'migrations' | 'sql' | 'uninstall'>> {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('postgresOperator: pass { pool, schema? }')
  assertKnownOptions('postgresOperator', options, OPTIONS)
  const { pool, schema = 'public', keyLayout } = options
  // The stores check the pool, the schema and the layout.
  const keys = postgresStore({ pool, schema, ...(keyLayout === undefined ? {} : { keyLayout }) })
  const leases = leasedPostgresStore({ pool, schema })
  const driver = postgresDriver(pool, schema)
  const statements = operatorStatements(schema)
  const reads = operatorReads(statements, driver)
  return {
    backend: 'Postgres',
    inspect: reads.inspect,
    stats: reads.stats,
    expiredCount: reads.expiredCount,
    async prune(prune = {}) {
      const deleted = await keys.prune(prune)
      const { batchSize, onBatch } = prune
      return deleted + (await leases.prune({ ...(batchSize === undefined ? {} : { batchSize }), ...(onBatch === undefined ? {} : { onBatch }) }))
    },
    sql: { dialect: postgresDialect, client: pool },
    migrations: { ...migrationOperator(migrationStatements(schema), driver, reads.tables), migrate: () => keys.migrate() },
    uninstall: sqlUninstall(statements, driver),
  }
}
