import type { BeginRequest, KeyRecord, Session } from '../../../core/store.js'
import { classifyPgError } from '../driver/errors.js'
import { checkOut, endClient, type HeldClient } from '../driver/held-client.js'
import { RecentKeys } from '../recent-keys.js'
import * as sql from '../dialect/index.js'
import type { PgClient, PgPool } from '../driver/types.js'
import { wireFor } from '../driver/wire.js'
import { AnsweredSession } from './answered-session.js'
import { toClaim, type KeyContext } from './context.js'
import { JoinedSession } from './joined-session.js'
import { OwnedSession } from './owned-session.js'

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
 * `KeyStore` of `idem_keys` (or `idem_keys_by_day`). A call's session is one of three:
 * - `OwnedSession`: the key claimed in a transaction of the store's own;
 * - `AnsweredSession`: a retry of a key recorded lately, answered by a plain read;
 * - `JoinedSession`: the key claimed in the caller's transaction (`tx`).
 */
export function keySessions({ pool, schema, isolation, preparedStatements }: Settings, table: sql.KeyTable): KeySessions {
  const context: KeyContext = {
    pool,
    schema,
    table,
    wire: wireFor(preparedStatements),
    opening: { statement: sql.begin(isolation) },
    recorded: new RecentKeys(RECENT_KEYS),
  }
  return { begin: (request) => begin(context, request) }
}

// Enough for the retries of the last seconds of a busy service, in about a megabyte at most.
const RECENT_KEYS = 10_000

async function begin(context: KeyContext, { scope, key, waitMs, tx }: BeginRequest<PgClient>): Promise<Session<PgClient>> {
  if (tx !== undefined) return JoinedSession.open(context, tx, scope, key, waitMs)
  const client = await checkOut(context.pool, context.schema)
  try {
    // A retry of a key this store recorded is most likely answered by its record: read
    // it outside any transaction, one round trip and nothing to end afterwards.
    if (context.recorded.has(scope, key)) {
      const found = await lookup(context, client, scope, key)
      if (found !== undefined) {
        client.release()
        return new AnsweredSession(client.client, found)
      }
      context.recorded.delete(scope, key)
    }
    const { table } = context
    const [, claimed] = await context.wire.send(client, [context.opening, { statement: table.prepared.claim, values: table.claim(scope, key, waitMs).values }], 'opens')
    return new OwnedSession(context, client, toClaim(claimed!), scope, key)
  } catch (error) {
    await endClient(client, error)
    throw classifyPgError(error, context.schema)
  }
}

/** The key's live record, read on its own (no transaction, no lock), if there is one. */
async function lookup({ wire, table }: KeyContext, client: HeldClient, scope: string, key: string): Promise<KeyRecord | undefined> {
  const [result] = await wire.send(client, [{ statement: table.prepared.lookup, values: table.lookup(scope, key).values }], 'outside')
  return result!.rows[0] as KeyRecord | undefined
}
