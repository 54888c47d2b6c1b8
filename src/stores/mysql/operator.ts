import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { StoreOperator } from '../../ports/operator.js'
import { migrationOperator } from '../sql/migrations.js'
import { operatorReads, sqlUninstall } from '../sql/operator.js'
import { migrationStatements } from './dialect/migrations.js'
import { operatorStatements } from './dialect/operator.js'
import { mysqlDriver } from './driver/store-driver.js'
import type { MysqlPool } from './driver/types.js'
import { mysqlStore } from './store.js'

/** What `mysqlOperator` takes: the pool. */
export interface MysqlOperatorOptions {
  /** A `mysql2/promise` pool on the database holding idem's tables. */
  pool: MysqlPool
}

const OPTIONS = optionNames<MysqlOperatorOptions>({ pool: true })

/**
 * The operator of a MySQL or MariaDB database: one key's record, counts and sizes
 * (sizes are InnoDB's estimates), expired records and their pruning (keys, inbox ids;
 * delivered outbox rows on request), its versioned migrations, and its removal. What
 * `idem stats|inspect|prune|migrate|uninstall --mysql` run.
 * @example
 * const operator = mysqlOperator({ pool })
 * const { keys } = await operator.stats(86_400_000)
 * await operator.prune({ batchSize: 5_000 })
 */
export function mysqlOperator(options: MysqlOperatorOptions): StoreOperator & Required<Pick<StoreOperator, 'stats' | 'expiredCount' | 'prune' | 'migrations' | 'uninstall'>> {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('mysqlOperator: pass { pool }')
  assertKnownOptions('mysqlOperator', options, OPTIONS)
  // The store checks the pool.
  const store = mysqlStore({ pool: options.pool })
  const driver = mysqlDriver(options.pool)
  const reads = operatorReads(operatorStatements, driver)
  return {
    backend: 'MySQL',
    inspect: reads.inspect,
    stats: reads.stats,
    expiredCount: reads.expiredCount,
    prune: (prune) => store.prune(prune),
    uninstall: sqlUninstall(operatorStatements, driver),
    // MySQL commits DDL as it runs it: every statement of a migration can run again instead.
    migrations: { ...migrationOperator(migrationStatements, driver, reads.tables), migrate: () => store.migrate(), transactional: false },
  }
}
