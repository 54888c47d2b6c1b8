import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { KeyPeek } from '../../ports/key-peek.js'
import type { KeyStore } from '../../ports/key-store.js'
import type { WithOnceTable } from '../../ports/once-table.js'
import type { WithDeadLetterTable } from '../../ports/dead-letter-table.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'
import type { WithOutboxTable } from '../../ports/outbox-table.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'
import { inboxTable } from '../sql/inbox.js'
import { keySessions } from '../sql/key-sessions.js'
import { pruneInBatches, type PruneOptions } from '../sql/prune.js'
import { deadLetterTable, onceTable, outboxTable } from '../sql/tables.js'
import { DEFAULT_PARTITION_DAYS_AHEAD, maintainDayPartitions } from './day-partitions.js'
import { migratePostgres, type MigrateResult } from './migrate.js'
import { postgresPeek } from './peek.js'
import { warnWithoutErrorListener } from './driver/pool-error-listener.js'
import { warnWithoutConnectTimeout } from './driver/pool-timeout.js'
import { postgresDriver } from './driver/store-driver.js'
import * as sql from './dialect/index.js'
import type { PgClient, PgExecutor, PgPool } from './driver/types.js'

/** What `postgresStore` takes: the pool, the schema, the isolation level and whether to use prepared statements. */
export interface PostgresStoreOptions {
  /** A `pg.Pool` (or anything with the same `connect()`); sessions take a client from it. */
  pool: PgPool
  /** Schema holding idem's tables. @default 'public' */
  schema?: string
  /**
   * Isolation of the transactions the store opens. READ COMMITTED lets a waiting
   * duplicate see the first call's commit and replay it; under the stricter levels a
   * waiter starts over in a new transaction instead. @default 'read committed'
   */
  isolation?: sql.Isolation
  /**
   * Prepare the claim and the record's INSERT once per connection (the extended
   * protocol's Parse, under a name), then only bind them, so Postgres does not parse and
   * plan them on every call. Turn it off
   * behind a pooler that moves sessions between server connections (PgBouncer
   * `pool_mode=transaction`): calls stay correct there, but each one that lands on a
   * connection without the statements pays an extra round trip. @default true
   */
  preparedStatements?: boolean
  /**
   * How the engine's keys are kept. `'table'`: one table, `idem_keys`, whose expired
   * rows `prune()` deletes in batches. `'daily-partitions'`: `idem_keys_by_day`,
   * partitioned by the UTC day a key expires, so expiry is one `DROP` of a day's
   * partition (no deletes, no vacuum after them); `migrate()` and `prune()` create the
   * partitions `partitionDaysAhead` days ahead, so run `prune()` (or `idem prune`)
   * daily. A key expiring beyond them lands in a DEFAULT partition, whose expired rows
   * prune deletes as it does `idem_keys`'. Calls and their statements are the same. Switching a running service
   * from one to the other is a move between key tables: see docs/scaling.md
   * (`dualReadStore`). @default 'table'
   */
  keyLayout?: 'table' | 'daily-partitions'
  /**
   * With `keyLayout: 'daily-partitions'`: how many days of partitions to keep ready
   * beyond today. Cover your longest `ttlMs` plus the days between prunes; every
   * partition costs each claim an index probe, so do not keep many more. @default 3
   */
  partitionDaysAhead?: number
}

/**
 * Every table idem keeps in one Postgres schema, behind the ports its front ends use:
 * the engine's keys (`KeyStore`: `idem_keys`), the inbox (`inbox`: `idem_inbox`,
 * `idem_inbox_attempts`), the outbox (`outbox`), dead letters and `once`.
 */
export interface PostgresStore
  extends KeyStore<PgClient>,
    WithInboxTable<PgClient>,
    WithOutboxTable<PgExecutor>,
    WithDeadLetterTable,
    WithOnceTable<PgExecutor>,
    KeyPeek {
  readonly schema: string
  readonly keyLayout: 'table' | 'daily-partitions'
  /** Creates or upgrades idem's tables in `schema` (and, with daily partitions, the days ahead). Safe to run from several instances at once. */
  migrate(): Promise<MigrateResult>
  /**
   * Deletes expired records (keys and inbox ids), and with `deliveredOutboxOlderThanMs`
   * old delivered outbox rows, in batches of `batchSize`, each its own short statement
   * (rows locked by a running call are skipped), until none are left. With daily
   * partitions it also drops the partitions whose day is over and creates the days ahead.
   * @returns how many records were deleted (for dropped partitions, Postgres's estimate of their rows)
   */
  prune(options?: PruneOptions): Promise<number>
}

const OPTIONS = optionNames<PostgresStoreOptions>({
  pool: true, schema: true, isolation: true, preparedStatements: true, keyLayout: true, partitionDaysAhead: true,
})

/**
 * The transactional Postgres store. A fresh call costs, on top of the caller's own
 * statements, one read round trip (lock and look up, sent with BEGIN) and one INSERT
 * (sent with COMMIT): no extra commit and no extra round trip. A retry of a key this
 * store recorded is one read outside any transaction; any other replay is one round trip
 * (BEGIN with the lookup), its ROLLBACK sent behind the answer.
 *
 * @example
 * const pool = new pg.Pool({ connectionTimeoutMillis: 5_000 })
 * pool.on('error', (error) => logger.warn(error)) // an idle connection dropped: without a listener, the process crashes
 * const store = postgresStore({ pool })
 * await store.migrate()
 * const idem = createIdem({ store })
 */
export function postgresStore(options: PostgresStoreOptions): PostgresStore {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('postgresStore: pass { pool }')
  assertKnownOptions('postgresStore', options, OPTIONS)
  const {
    pool,
    schema = 'public',
    isolation = 'read committed',
    preparedStatements = true,
    keyLayout = 'table',
    partitionDaysAhead = DEFAULT_PARTITION_DAYS_AHEAD,
  } = options
  if (pool === null || typeof pool !== 'object' || typeof pool.connect !== 'function') {
    throw new InvalidOptionError('postgresStore: option "pool" must be a pg.Pool')
  }
  try {
    sql.quoteSchema(schema)
  } catch (cause) {
    throw new InvalidOptionError(`postgresStore: option "schema": ${(cause as Error).message}`, { cause })
  }
  if (!['read committed', 'repeatable read', 'serializable'].includes(isolation)) {
    throw new InvalidOptionError('postgresStore: option "isolation" must be "read committed", "repeatable read" or "serializable"')
  }
  if (typeof preparedStatements !== 'boolean') throw new InvalidOptionError('postgresStore: option "preparedStatements" must be a boolean')
  if (keyLayout !== 'table' && keyLayout !== 'daily-partitions') {
    throw new InvalidOptionError(`postgresStore: option "keyLayout" must be "table" or "daily-partitions", got ${JSON.stringify(keyLayout)}`)
  }
  assertCount('postgresStore: option "partitionDaysAhead"', partitionDaysAhead, 1, 366)
  warnWithoutConnectTimeout(pool, 'postgresStore')
  warnWithoutErrorListener(pool, 'postgresStore')
  const partitioned = keyLayout === 'daily-partitions'
  const dialect = sql.postgresStoreDialect(schema, { keyLayout, isolation })
  const driver = postgresDriver(pool, schema, preparedStatements)
  // Expired rows of idem_keys too: after a switch of layout it still holds the old keys.
  const walks = sql.pruneWalks(schema, partitioned ? ['idem_keys', 'idem_inbox', 'idem_keys_by_day_later'] : ['idem_keys', 'idem_inbox'])
  return {
    name: 'postgres',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    schema,
    keyLayout,
    begin: keySessions(dialect.keys, driver).begin,
    peek: postgresPeek(pool, schema, sql.keyPeekStatements(schema, keyLayout)),
    inbox: inboxTable(dialect.inbox, driver),
    outbox: outboxTable(dialect.outbox, driver),
    deadLetters: deadLetterTable(dialect.deadLetters, driver),
    once: onceTable(dialect.once, driver),
    async migrate() {
      const result = await migratePostgres(pool, { schema })
      if (partitioned) await maintainDayPartitions(pool, schema, { daysAhead: partitionDaysAhead, drop: false })
      return result
    },
    async prune(options) {
      const deleted = await pruneInBatches(driver, walks, options)
      if (!partitioned) return deleted
      const { droppedRows } = await maintainDayPartitions(pool, schema, { daysAhead: partitionDaysAhead, drop: true })
      return deleted + droppedRows
    },
  }
}
