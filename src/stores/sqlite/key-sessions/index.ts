import { keyId } from '../../../core/identity.js'
import type { BeginRequest, Session } from '../../../core/store.js'
import type { SqliteDatabase } from '../../../ports/sql-clients.js'
import { inTransaction } from '../connection.js'
import { joinedRecordsOpen, LOCKED, type KeyContext } from './context.js'
import { EndedSession } from './ended-session.js'
import { JoinedSession } from './joined-session.js'
import { OwnedSession } from './owned-session.js'

export interface KeySessions {
  begin(request: BeginRequest<SqliteDatabase>): Promise<Session<SqliteDatabase>>
}

/**
 * The transactional SQLite store's sessions over `idem_keys`: its `KeyStore`. A call's
 * session is one of three:
 * - `OwnedSession`: the key claimed in a write transaction of the store's own;
 * - `EndedSession`: a retry answered by its committed record, read outside the writer's
 *   queue, or a key locked for longer than `waitMs`;
 * - `JoinedSession`: the key claimed in the caller's transaction (`tx`).
 */
export function keySessions(context: KeyContext): KeySessions {
  return { begin: (request) => begin(context, request) }
}

async function begin(context: KeyContext, { scope, key, waitMs, tx }: BeginRequest<SqliteDatabase>): Promise<Session<SqliteDatabase>> {
  if (tx !== undefined) return JoinedSession.open(context, tx, scope, key)
  const { db } = context
  // Replays need no turn in the queue: a committed record is final until it expires.
  // But a read on this connection also sees what an open transaction wrote, and a
  // joined call's record is uncommitted until its caller commits (or rolls back): then
  // the read waits for its turn like a new call.
  if (!inTransaction(db)) joinedRecordsOpen.delete(db)
  if (!joinedRecordsOpen.has(db)) {
    const committed = context.statements.read(scope, key)
    if (committed !== undefined) return new EndedSession(db, { state: 'found', record: committed })
  }
  const leaveKey = await context.gate.enter(keyId(scope, key), waitMs)
  if (leaveKey === undefined) return new EndedSession(db, LOCKED)
  return OwnedSession.open(context, scope, key, leaveKey)
}
