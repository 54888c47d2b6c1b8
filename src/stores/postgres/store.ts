import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { KeyStore } from '../../core/store.js'
import type { WithOnceTable } from '../../data/once-table.js'
import type { WithDeadLetterTable } from '../../queue/dead-letter-table.js'
import type { WithInboxTable } from '../../queue/inbox-table.js'
import type { WithOutboxTable } from '../../queue/outbox-table.js'
import { postgresDeadLetterTable } from './dead-letter-table.js'
import { postgresInboxTable } from './inbox-table.js'
import { keySessions, type Settings } from './key-sessions.js'
import { migratePostgres, type MigrateResult } from './migrate.js'
import { postgresOnceTable } from './once-table.js'
import { postgresOutboxTable } from './outbox-table.js'
import { pruneExpired, type PruneOptions } from './pool-query.js'
import { warnWithoutErrorListener } from './pool-error-listener.js'
import { warnWithoutConnectTimeout } from './pool-timeout.js'
import * as sql from './sql/index.js'
import type { PgClient, PgExecutor, PgPool } from './types.js'

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
   * Prepare the claim and the record's INSERT once per connection (SQL `PREPARE`, then
   * `EXECUTE`), so Postgres does not parse and plan them on every call. Turn it off
   * behind a pooler that moves sessions between server connections (PgBouncer
   * `pool_mode=transaction`): calls stay correct there, but each one that lands on a
   * connection without the statements pays an extra round trip. @default true
   */
  preparedStatements?: boolean
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
    WithOnceTable<PgExecutor> {
  readonly schema: string
  /** Creates or upgrades idem's tables in `schema`. Safe to run from several instances at once. */
  migrate(): Promise<MigrateResult>
  /**
   * Deletes expired records (keys and inbox ids), and with `deliveredOutboxOlderThanMs`
   * old delivered outbox rows, in batches of `batchSize`, each its own short statement
   * (rows locked by a running call are skipped), until none are left.
   * @returns how many records were deleted
   */
  prune(options?: PruneOptions): Promise<number>
}

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
export function postgresStore({
  pool,
  schema = 'public',
  isolation = 'read committed',
  preparedStatements = true,
}: PostgresStoreOptions): PostgresStore {
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
  warnWithoutConnectTimeout(pool, 'postgresStore')
  warnWithoutErrorListener(pool, 'postgresStore')
  const settings: Settings = { pool, schema, isolation, preparedStatements }
  return {
    name: 'postgres',
    schema,
    begin: keySessions(settings, sql.keysTable(schema)).begin,
    inbox: postgresInboxTable(settings),
    outbox: postgresOutboxTable(pool, schema),
    deadLetters: postgresDeadLetterTable(pool, schema),
    once: postgresOnceTable(schema),
    migrate: () => migratePostgres(pool, { schema }),
    prune: (options) => pruneExpired(pool, schema, ['idem_keys', 'idem_inbox'], options),
  }
}
