import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { BeginRequest, Claim, NewRecord, Session, Store } from '../../core/store.js'
import { classifyPgError } from './errors.js'
import { migratePostgres, type MigrateResult } from './migrate.js'
import * as sql from './sql.js'
import type { PgClient, PgPool, PgPoolClient, PgQueryResult } from './types.js'

export interface PostgresStoreOptions {
  /** A `pg.Pool` (or anything with the same `connect()`); sessions take a client from it. */
  pool: PgPool
  /** Schema holding `idem_keys`. @default 'public' */
  schema?: string
  /**
   * Isolation of the transactions the store opens. READ COMMITTED lets a waiting
   * duplicate see the first call's commit and replay it; under the stricter levels a
   * waiter starts over in a new transaction instead. @default 'read committed'
   */
  isolation?: sql.Isolation
}

export interface PostgresStore extends Store<PgClient> {
  readonly schema: string
  /** Creates or upgrades idem's tables in `schema`. Safe to run from several instances at once. */
  migrate(): Promise<MigrateResult>
  /**
   * Deletes expired records in batches of `batchSize`, each its own short statement
   * (rows locked by a running call are skipped), until none are left.
   * @returns how many records were deleted
   */
  prune(options?: { batchSize?: number }): Promise<number>
}

/**
 * The transactional Postgres store. A fresh call costs, on top of the caller's own
 * statements, one read round trip (lock and look up, sent with BEGIN) and one INSERT
 * (sent with COMMIT): no extra commit and no extra round trip.
 *
 * @example
 * const store = postgresStore({ pool: new pg.Pool() })
 * await store.migrate()
 */
export function postgresStore({ pool, schema = 'public', isolation = 'read committed' }: PostgresStoreOptions): PostgresStore {
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
  const beginText = sql.begin(isolation)
  const fail = (error: unknown): unknown => classifyPgError(error, schema)

  async function begin({ scope, key, waitMs, tx }: BeginRequest<PgClient>): Promise<Session<PgClient>> {
    if (tx !== undefined) return joinedSession(tx, scope, key, waitMs)
    let client: PgPoolClient
    try {
      client = await pool.connect()
    } catch (error) {
      throw fail(error)
    }
    let claim: Claim
    try {
      // BEGIN and the claim share one round trip: the claim is inlined as literals.
      const results = (await client.query(
        `${beginText}; ${sql.inline(sql.claim(schema, scope, key, waitMs), (v) => client.escapeLiteral(v))}`,
      )) as unknown as PgQueryResult[]
      claim = toClaim(results[1]!)
    } catch (error) {
      await endClient(client, 'ROLLBACK', error)
      throw fail(error)
    }
    return ownedSession(client, claim, scope, key)
  }

  function ownedSession(client: PgPoolClient, claim: Claim, scope: string, key: string): Session<PgClient> {
    let ended = false
    return {
      tx: client,
      claim,
      joined: false,
      async commit(record: NewRecord) {
        ended = true
        const insert = sql.inline(save(scope, key, record), (v) => client.escapeLiteral(v))
        try {
          await client.query(`${insert}; COMMIT`)
        } catch (error) {
          await endClient(client, 'ROLLBACK', error)
          throw fail(error)
        }
        client.release()
      },
      async rollback() {
        if (ended) return
        ended = true
        await endClient(client, 'ROLLBACK')
      },
    }
  }

  async function joinedSession(tx: PgClient, scope: string, key: string, waitMs: number): Promise<Session<PgClient>> {
    if (typeof tx.query !== 'function') throw new InvalidOptionError('run: option "tx" must be a pg client inside an open transaction')
    const statement = sql.claim(schema, scope, key, waitMs)
    let claim: Claim
    try {
      claim = toClaim(await tx.query(statement.text, statement.values))
    } catch (error) {
      throw fail(error)
    }
    return {
      tx,
      claim,
      joined: true,
      async commit(record: NewRecord) {
        const statement = save(scope, key, record)
        try {
          await tx.query(statement.text, statement.values)
        } catch (error) {
          throw fail(error)
        }
      },
      async rollback() {},
    }
  }

  function save(scope: string, key: string, record: NewRecord): sql.Statement {
    return sql.save(schema, scope, key, record.fingerprint, record.outcome, record.ttlMs)
  }

  async function prune({ batchSize = 1_000 }: { batchSize?: number } = {}): Promise<number> {
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new InvalidOptionError('prune: option "batchSize" must be a whole number ≥ 1')
    const statement = sql.prune(schema, batchSize)
    let deleted = 0
    for (;;) {
      let client: PgPoolClient
      try {
        client = await pool.connect()
      } catch (error) {
        throw fail(error)
      }
      try {
        const { rowCount } = await client.query(statement.text, statement.values)
        deleted += rowCount ?? 0
        if ((rowCount ?? 0) < batchSize) return deleted
      } catch (error) {
        throw fail(error)
      } finally {
        client.release()
      }
    }
  }

  return {
    name: 'postgres',
    schema,
    begin,
    migrate: () => migratePostgres(pool, { schema }),
    prune,
  }
}

function toClaim(result: PgQueryResult): Claim {
  const row = result.rows[0] as { state: string; fingerprint: string | null; outcome: string | null } | undefined
  switch (row?.state) {
    case 'new':
      return { state: 'new' }
    case 'found':
      return { state: 'found', record: { fingerprint: row.fingerprint!, outcome: row.outcome! } }
    case 'locked':
      return { state: 'locked' }
    case 'stale':
      return { state: 'stale' }
    default:
      throw new Error(`idem_claim returned an unexpected row: ${JSON.stringify(row)}`)
  }
}

// Ends an owned transaction and returns its client to the pool; a client whose
// connection failed is destroyed rather than reused.
async function endClient(client: PgPoolClient, statement: 'ROLLBACK', cause?: unknown): Promise<void> {
  try {
    await client.query(statement)
    client.release()
  } catch (error) {
    client.release(error instanceof Error ? error : new Error(String(cause ?? error)))
  }
}
