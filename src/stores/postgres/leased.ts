import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { Lease, LeaseClaim, LeasedStore } from '../../ports/leased-store.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'
import { LEASED_PRUNE_OPTIONS, pruneInBatches } from '../sql/prune.js'
import { migratePostgres, type MigrateResult } from './migrate.js'
import { queryOnPool } from './driver/pool-query.js'
import { postgresDriver } from './driver/store-driver.js'
import { warnWithoutErrorListener } from './driver/pool-error-listener.js'
import { warnWithoutConnectTimeout } from './driver/pool-timeout.js'
import * as sql from './dialect/index.js'
import type { PgPool, PgQueryResult } from './driver/types.js'

/** What `leasedPostgresStore` takes: the pool and the schema. */
export interface LeasedPostgresStoreOptions {
  /** A `pg.Pool` (or anything with the same `connect()`). Each store call is one autocommit statement. */
  pool: PgPool
  /** Schema holding `idem_leases` and `idem_steps`. @default 'public' */
  schema?: string
}

/** The leased-engine store on Postgres, with `prune` for expired claims and outcomes. */
export interface LeasedPostgresStore extends LeasedStore {
  readonly schema: string
  /** Creates or upgrades idem's tables in `schema` (the same migrations as `postgresStore`). */
  migrate(): Promise<MigrateResult>
  /**
   * Deletes expired leased keys (and their steps) in batches of `batchSize`, each its
   * own short statement, until none are left.
   * @returns how many keys were deleted
   */
  prune(options?: { batchSize?: number; onBatch?: (deleted: number) => void }): Promise<number>
}

const OPTIONS = optionNames<LeasedPostgresStoreOptions>({ pool: true, schema: true })

/**
 * The leased store on Postgres, for effects that live outside the database (or
 * outside the transaction): claims, steps and outcomes in `idem_leases` and
 * `idem_steps`. Every call is one statement in its own transaction, so a saved step
 * survives anything the caller rolls back later. A fresh call costs two statements
 * (claim, complete), a replay one.
 *
 * @example
 * const pool = new pg.Pool({ connectionTimeoutMillis: 5_000 })
 * pool.on('error', (error) => logger.warn(error)) // an idle connection dropped: without a listener, the process crashes
 * const store = leasedPostgresStore({ pool })
 * await store.migrate()
 * const idem = createLeasedIdem({ store })
 */
export function leasedPostgresStore(options: LeasedPostgresStoreOptions): LeasedPostgresStore {
  assertKnownOptions('leasedPostgresStore', options, OPTIONS)
  const { pool, schema = 'public' } = options
  if (pool === null || typeof pool !== 'object' || typeof pool.connect !== 'function') {
    throw new InvalidOptionError('leasedPostgresStore: option "pool" must be a pg.Pool')
  }
  try {
    sql.quoteSchema(schema)
  } catch (cause) {
    throw new InvalidOptionError(`leasedPostgresStore: option "schema": ${(cause as Error).message}`, { cause })
  }
  warnWithoutConnectTimeout(pool, 'leasedPostgresStore')
  warnWithoutErrorListener(pool, 'leasedPostgresStore')

  const query = (statement: sql.Statement): Promise<PgQueryResult> => queryOnPool(pool, schema, statement)

  return {
    name: 'postgres',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    schema,
    migrate: () => migratePostgres(pool, { schema }),
    prune: (options) => pruneInBatches(postgresDriver(pool, schema), sql.pruneWalks(schema, ['idem_leases']), options, LEASED_PRUNE_OPTIONS),
    async claim(scope, key, fingerprint, leaseMs, ttlMs) {
      const row = (await query(sql.leaseClaim(schema, scope, key, fingerprint, leaseMs, ttlMs))).rows[0] as ClaimRow | undefined
      return toClaim(row, (token) => new PostgresLease(query, schema, scope, key, token))
    },
  }
}

interface ClaimRow {
  state: string
  fingerprint: string
  token: string | null
  outcome: string | null
  steps: string | null
}

/** One claim of a key in `idem_leases`: each write is one statement, compare-and-set on (state 'held', this claim's token). */
class PostgresLease implements Lease {
  readonly #query: (statement: sql.Statement) => Promise<PgQueryResult>
  readonly #schema: string
  readonly #scope: string
  readonly #key: string
  // The token travels as text (bigint).
  readonly #token: string

  constructor(query: (statement: sql.Statement) => Promise<PgQueryResult>, schema: string, scope: string, key: string, token: string) {
    this.#query = query
    this.#schema = schema
    this.#scope = scope
    this.#key = key
    this.#token = token
  }

  renew(leaseMs: number): Promise<boolean> {
    return this.#changed(sql.leaseRenew(this.#schema, this.#scope, this.#key, this.#token, leaseMs))
  }

  saveStep(name: string, result: string): Promise<boolean> {
    return this.#changed(sql.leaseSaveStep(this.#schema, this.#scope, this.#key, this.#token, name, result))
  }

  async complete(outcome: string, ttlMs: number): Promise<boolean> {
    const { rows } = await this.#query(sql.leaseComplete(this.#schema, this.#scope, this.#key, this.#token, outcome, ttlMs))
    return (rows[0] as { completed: number }).completed === 1
  }

  release(): Promise<boolean> {
    return this.#changed(sql.leaseRelease(this.#schema, this.#scope, this.#key, this.#token))
  }

  async fencingToken(): Promise<number | undefined> {
    return (await this.#changed(sql.leaseHolds(this.#schema, this.#scope, this.#key, this.#token))) ? Number(this.#token) : undefined
  }

  async #changed(statement: sql.Statement): Promise<boolean> {
    return (await this.#query(statement)).rowCount === 1
  }
}

function toClaim(row: ClaimRow | undefined, leaseOf: (token: string) => Lease): LeaseClaim {
  switch (row?.state) {
    case 'acquired':
      if (row.token === null) break
      return { state: 'acquired', lease: leaseOf(row.token), steps: new Map(JSON.parse(row.steps ?? '[]') as Array<[string, string]>) }
    case 'completed':
      return { state: 'completed', record: { fingerprint: row.fingerprint, outcome: row.outcome! } }
    case 'running':
      return { state: 'running', fingerprint: row.fingerprint }
  }
  throw new Error(`idem_lease_claim returned an unexpected row: ${JSON.stringify(row)}`)
}
