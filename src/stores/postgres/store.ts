import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { BeginRequest, Claim, KeyRecord, NewRecord, Session, Store } from '../../core/store.js'
import { classifyPgError } from './errors.js'
import { checkOut, type HeldClient } from './held-client.js'
import { migratePostgres, type MigrateResult } from './migrate.js'
import { pruneExpired } from './pool-query.js'
import { warnWithoutConnectTimeout } from './pool-timeout.js'
import { RecentKeys } from './recent-keys.js'
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
  /**
   * Prepare the claim and the record's INSERT once per connection (SQL `PREPARE`, then
   * `EXECUTE`), so Postgres does not parse and plan them on every call. Turn it off
   * behind a pooler that moves sessions between server connections (PgBouncer
   * `pool_mode=transaction`): calls stay correct there, but each one that lands on a
   * connection without the statements pays an extra round trip. @default true
   */
  preparedStatements?: boolean
}

export interface PostgresStore extends Store<PgClient> {
  readonly schema: string
  /**
   * The store the inbox keeps message ids in (`idem_inbox`: consumer, id, expiry): the
   * same pool and settings over a narrower table, for calls that store no outcome. The
   * scope is the consumer's name. `createInbox` uses it; `prune()` covers it.
   */
  readonly inboxIds: Store<PgClient>
  /** Creates or upgrades idem's tables in `schema`. Safe to run from several instances at once. */
  migrate(): Promise<MigrateResult>
  /**
   * Deletes expired records (keys and inbox ids) in batches of `batchSize`, each its own
   * short statement (rows locked by a running call are skipped), until none are left.
   * @returns how many records were deleted
   */
  prune(options?: { batchSize?: number }): Promise<number>
}

/**
 * The transactional Postgres store. A fresh call costs, on top of the caller's own
 * statements, one read round trip (lock and look up, sent with BEGIN) and one INSERT
 * (sent with COMMIT): no extra commit and no extra round trip. A retry of a key this
 * store recorded is one read outside any transaction; any other replay is one round trip
 * (BEGIN with the lookup), its ROLLBACK sent behind the answer.
 *
 * @example
 * const store = postgresStore({ pool: new pg.Pool({ connectionTimeoutMillis: 5_000 }) })
 * await store.migrate()
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
  const settings: Settings = { pool, schema, isolation, preparedStatements }
  const keys = sql.keysTable(schema)
  const inbox = sql.inboxTable(schema)
  return {
    ...tableStore(settings, keys),
    schema,
    inboxIds: tableStore(settings, inbox),
    migrate: () => migratePostgres(pool, { schema }),
    prune: (options) => pruneExpired(pool, schema, ['idem_keys', 'idem_inbox'], options),
  }
}

interface Settings {
  pool: PgPool
  schema: string
  isolation: sql.Isolation
  preparedStatements: boolean
}

/** The transactional store over one key table (see `sql.KeyTable`). */
function tableStore({ pool, schema, isolation, preparedStatements }: Settings, table: sql.KeyTable): Store<PgClient> {
  const beginText = sql.begin(isolation)
  const fail = (error: unknown): unknown => classifyPgError(error, schema)
  const { claim: claimStatement, save: saveStatement, mark: markStatement, lookup: lookupStatement } = table.prepared
  const ours = [claimStatement, saveStatement, markStatement, lookupStatement]
  const recorded = new RecentKeys(RECENT_KEYS)

  async function begin({ scope, key, waitMs, tx, record }: BeginRequest<PgClient>): Promise<Session<PgClient>> {
    // A table without outcomes has no record to read: a found key is the caller's own.
    if (!table.keepsOutcomes && record === undefined) {
      throw new InvalidOptionError('postgresStore: the inbox id table keeps no outcomes; run its calls with storeOutcome: false')
    }
    const known: KeyRecord | undefined = table.keepsOutcomes ? undefined : { fingerprint: record!.fingerprint, outcome: 'null' }
    if (tx !== undefined) return joinedSession(tx, scope, key, waitMs, known)
    const client = await checkOut(pool, schema)
    try {
      // A retry of a key this store recorded is most likely answered by its record: read
      // it outside any transaction, one round trip and nothing to end afterwards.
      if (recorded.has(scope, key)) {
        const found = await lookup(client, scope, key, known)
        if (found !== undefined) {
          client.release()
          return answeredSession(client.client, found)
        }
        recorded.delete(scope, key)
      }
      // A call that stores no outcome writes its record with the claim (READ COMMITTED
      // only: the stricter levels keep the usual path, which handles their stale snapshots).
      if (record !== undefined && isolation === 'read committed') return await markedSession(client, scope, key, waitMs, record, known)
      const first = await sendWith(client, beginText, claimStatement, table.claim(scope, key, waitMs))
      return ownedSession(client, toClaim(first.result, known), scope, key, first.prepared)
    } catch (error) {
      await endClient(client, 'ROLLBACK', error)
      throw fail(error)
    }
  }

  /**
   * BEGIN and `mark` in one round trip: a new key is claimed with its record already
   * written, so the commit is a bare COMMIT. Otherwise (a stored key, or another call
   * holding it) a second round trip claims it the usual way, in the same transaction,
   * and any record is then written at commit as usual.
   */
  async function markedSession(
    client: HeldClient,
    scope: string,
    key: string,
    waitMs: number,
    record: NonNullable<BeginRequest<PgClient>['record']>,
    known: KeyRecord | undefined,
  ): Promise<Session<PgClient>> {
    const first = await sendWith(client, beginText, markStatement, table.mark(scope, key, record.fingerprint, record.ttlMs))
    if (first.result.rowCount === 1) return ownedSession(client, { state: 'new' }, scope, key, first.prepared, true)
    const claim = toClaim(await client.query(inlined(client, table.claim(scope, key, waitMs))), known)
    return ownedSession(client, claim, scope, key, first.prepared)
  }

  /** The key's live record, read on its own (no transaction, no lock), if there is one. */
  async function lookup(client: HeldClient, scope: string, key: string, known: KeyRecord | undefined): Promise<KeyRecord | undefined> {
    const { result } = await sendWith(client, '', lookupStatement, table.lookup(scope, key))
    const row = result.rows[0] as KeyRecord | undefined
    return row === undefined ? undefined : (known ?? row)
  }

  /**
   * One of the store's statements, after `opening` (BEGIN, or nothing) in the same round
   * trip: `EXECUTE` of its prepared form with the plain statement's values (statements
   * this connection lacks are prepared in the same round trip), or the plain statement
   * itself when prepared statements are off or the connection lost them.
   * @returns the statement's result, and whether the connection has the statements now
   */
  async function sendWith(
    client: HeldClient,
    opening: string,
    statement: sql.PreparedStatement,
    plain: sql.Statement,
  ): Promise<{ result: PgQueryResult; prepared: boolean }> {
    const open = opening === '' ? '' : `${opening}; `
    if (!preparedStatements) return { result: lastResult(await client.query(`${open}${inlined(client, plain)}`)), prepared: false }
    const ready = connections.get(client.client)
    const missing = ours.every((s) => ready.has(s.name)) ? '' : ours.filter((s) => !ready.has(s.name)).map((s) => `${s.prepare}; `).join('')
    try {
      const result = lastResult(await client.query(`${open}${missing}${inlined(client, sql.execute(statement, plain.values))}`))
      if (missing !== '') for (const s of ours) ready.add(s.name)
      return { result, prepared: true }
    } catch (error) {
      if (!isPreparedMismatch(error)) throw error
      // The connection's statements are not what this store recorded (a pooler moved the
      // session, DISCARD ALL, another copy of idem on the pool): read what it has, and
      // run this call with plain statements. Only an explicit BEGIN leaves a failed
      // transaction to roll back.
      const names = inlined(client, sql.preparedNames(ours.map((s) => s.name)))
      const results = (await client.query(`${open === '' ? '' : 'ROLLBACK; '}${open}${inlined(client, plain)}; ${names}`)) as unknown as PgQueryResult[]
      const present = (results[results.length - 1]!.rows as { name: string }[]).map((row) => row.name)
      connections.reset(client.client, ours, present)
      return { result: results[results.length - 2]!, prepared: false }
    }
  }

  function ownedSession(client: HeldClient, claim: Claim, scope: string, key: string, prepared: boolean, marked = false): Session<PgClient> {
    let ended = false
    return {
      tx: client.client,
      claim,
      joined: false,
      lost: () => client.lost,
      async commit(record: NewRecord) {
        ended = true
        try {
          // A marked claim wrote the record already.
          await client.query(marked ? 'COMMIT' : `${inlined(client, saveFor(scope, key, record, prepared))}; COMMIT`)
        } catch (error) {
          await endClient(client, 'ROLLBACK', error)
          throw fail(error)
        }
        client.release()
        recorded.add(scope, key)
      },
      async rollback() {
        if (ended) return
        ended = true
        await endClient(client, 'ROLLBACK')
      },
    }
  }

  /** A retry answered by `lookup`: its client is back in the pool, and there is nothing to end. */
  function answeredSession(client: PgPoolClient, record: KeyRecord): Session<PgClient> {
    return {
      tx: client,
      claim: { state: 'found', record },
      joined: false,
      async commit() {
        throw new Error('postgresStore: a replayed key has nothing to commit')
      },
      async rollback() {},
    }
  }

  async function joinedSession(
    tx: PgClient,
    scope: string,
    key: string,
    waitMs: number,
    known: KeyRecord | undefined,
  ): Promise<Session<PgClient>> {
    if (typeof tx.query !== 'function') throw new InvalidOptionError('run: option "tx" must be a pg client inside an open transaction')
    const statement = table.claim(scope, key, waitMs)
    let claim: Claim
    try {
      claim = toClaim(await tx.query(statement.text, statement.values), known)
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
    return table.save(scope, key, record.fingerprint, record.outcome, record.ttlMs)
  }

  /**
   * The record's INSERT for a transaction the store opened: prepared only when the
   * transaction's claim ran prepared (both were prepared together, and a transaction
   * stays on its server connection).
   */
  function saveFor(scope: string, key: string, record: NewRecord, prepared: boolean): sql.Statement {
    const plain = save(scope, key, record)
    return prepared ? sql.execute(saveStatement, plain.values) : plain
  }

  return { name: 'postgres', begin }
}

// Enough for the retries of the last seconds of a busy service, in about a megabyte at most.
const RECENT_KEYS = 10_000

/** A statement with its values inlined as the client escapes them, for the simple protocol (which carries several statements in one round trip). */
function inlined(client: HeldClient, statement: sql.Statement): string {
  return sql.inline(statement, (v) => client.client.escapeLiteral(v))
}

/** The result of the last statement of a text (pg gives an array only for several statements). */
function lastResult(results: unknown): PgQueryResult {
  if (!Array.isArray(results)) return results as PgQueryResult
  return results[results.length - 1] as PgQueryResult
}

// A prepared statement that is missing (26000) or already there (42P05).
function isPreparedMismatch(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '26000' || code === '42P05'
}

/**
 * Which of the store's statements each server connection has prepared. A connection is
 * known by its backend process id (stable through wrappers around the client), else by
 * the client object. Being wrong costs one round trip (see `begin`), so the record is
 * simply dropped when it grows past any plausible pool.
 */
class PreparedOn {
  readonly #names = new Map<unknown, Set<string>>()
  get(client: PgPoolClient): Set<string> {
    const id = connectionId(client)
    let names = this.#names.get(id)
    if (names === undefined) {
      if (this.#names.size >= 10_000) this.#names.clear()
      this.#names.set(id, (names = new Set()))
    }
    return names
  }
  /**
   * Corrects what is known of `checked` (one store's statements) to `present`, leaving
   * other stores' statements on the connection as they were: dropping them too would
   * have two stores on one pool correct each other on every call.
   */
  reset(client: PgPoolClient, checked: readonly sql.PreparedStatement[], present: readonly string[]): void {
    const names = this.get(client)
    for (const statement of checked) names.delete(statement.name)
    for (const name of present) names.add(name)
  }
}

// Shared by every store in the process: stores on one pool and schema prepare the same names.
const connections = new PreparedOn()

function connectionId(client: PgPoolClient): unknown {
  const pid = (client as { processID?: unknown }).processID
  return typeof pid === 'number' ? pid : client
}

/** Reads a claim's row; `known` is the record of a found key in a table without outcomes. */
function toClaim(result: PgQueryResult, known: KeyRecord | undefined): Claim {
  const row = result.rows[0] as { state: string; fingerprint: string | null; outcome: string | null } | undefined
  switch (row?.state) {
    case 'new':
      return { state: 'new' }
    case 'found':
      return { state: 'found', record: known ?? { fingerprint: row.fingerprint!, outcome: row.outcome! } }
    case 'locked':
      return { state: 'locked' }
    case 'stale':
      return { state: 'stale' }
    default:
      throw new Error(`idem_claim returned an unexpected row: ${JSON.stringify(row)}`)
  }
}

// Ends an owned transaction and returns its client to the pool; a client whose
// connection failed is destroyed rather than reused, and a lost one is not even asked.
async function endClient(client: HeldClient, statement: 'ROLLBACK', cause?: unknown): Promise<void> {
  if (client.lost !== undefined) return client.release()
  try {
    await client.query(statement)
    client.release()
  } catch (error) {
    client.release(error instanceof Error ? error : new Error(String(cause ?? error)))
  }
}
