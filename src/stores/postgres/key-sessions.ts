import type { BeginRequest, Claim, KeyRecord, NewRecord, Session } from '../../core/store.js'
import { classifyPgError } from './driver/errors.js'
import { assertExecutor } from './driver/executors.js'
import { checkOut, type HeldClient } from './driver/held-client.js'
import { RecentKeys } from './recent-keys.js'
import * as sql from './dialect/index.js'
import type { PgClient, PgPool, PgPoolClient } from './driver/types.js'
import { wireFor } from './driver/wire.js'

/** What the sessions are opened with: the store's options. */
export interface Settings {
  pool: PgPool
  schema: string
  isolation: sql.Isolation
  preparedStatements: boolean
}

export interface KeySessions {
  begin(request: BeginRequest<PgClient>): Promise<Session<PgClient>>
}

/**
 * The transactional store's sessions over one key table (see `sql.KeyTable`): the
 * `KeyStore` of `idem_keys` (or `idem_keys_by_day`).
 */
export function keySessions({ pool, schema, isolation, preparedStatements }: Settings, table: sql.KeyTable): KeySessions {
  const opening = sql.begin(isolation)
  const fail = (error: unknown): unknown => classifyPgError(error, schema)
  const { claim: claimStatement, save: saveStatement, lookup: lookupStatement } = table.prepared
  const { send } = wireFor(preparedStatements)
  const recorded = new RecentKeys(RECENT_KEYS)

  async function begin({ scope, key, waitMs, tx }: BeginRequest<PgClient>): Promise<Session<PgClient>> {
    if (tx !== undefined) return joinedSession(tx, scope, key, waitMs)
    const client = await checkOut(pool, schema)
    try {
      // A retry of a key this store recorded is most likely answered by its record: read
      // it outside any transaction, one round trip and nothing to end afterwards.
      if (recorded.has(scope, key)) {
        const found = await lookup(client, scope, key)
        if (found !== undefined) {
          client.release()
          return answeredSession(client.client, found)
        }
        recorded.delete(scope, key)
      }
      const [, claimed] = await send(client, [{ statement: opening }, { statement: claimStatement, values: table.claim(scope, key, waitMs).values }], 'opens')
      return ownedSession(client, toClaim(claimed!), scope, key)
    } catch (error) {
      await endClient(client, 'ROLLBACK', error)
      throw fail(error)
    }
  }

  /** The key's live record, read on its own (no transaction, no lock), if there is one. */
  async function lookup(client: HeldClient, scope: string, key: string): Promise<KeyRecord | undefined> {
    const [result] = await send(client, [{ statement: lookupStatement, values: table.lookup(scope, key).values }], 'outside')
    const row = result!.rows[0] as KeyRecord | undefined
    return row
  }

  function ownedSession(client: HeldClient, claim: Claim, scope: string, key: string): Session<PgClient> {
    let ended = false
    return {
      tx: client.client,
      claim,
      joined: false,
      lost: () => client.lost,
      async commit(record: NewRecord) {
        ended = true
        try {
          await send(client, [{ statement: saveStatement, values: save(scope, key, record).values }, { statement: sql.COMMIT }], 'inside')
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
      // The function may still be using the client: it is closed, not returned to the pool.
      async abandon() {
        if (ended) return
        ended = true
        await client.abandon()
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

  async function joinedSession(tx: PgClient, scope: string, key: string, waitMs: number): Promise<Session<PgClient>> {
    assertExecutor('run: option "tx"', tx)
    const statement = table.claim(scope, key, waitMs)
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
    return table.save(scope, key, record.fingerprint, record.outcome, record.ttlMs)
  }

  return { begin }
}

// Enough for the retries of the last seconds of a busy service, in about a megabyte at most.
const RECENT_KEYS = 10_000

/** Reads a claim's row. */
function toClaim(result: { rows: unknown[] }): Claim {
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
