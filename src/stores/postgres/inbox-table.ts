import type { InboxSession, InboxTable } from '../../ports/inbox-table.js'
import { classifyPgError } from './errors.js'
import { keySessions, type Settings } from './key-sessions.js'
import { queryOnPool } from './pool-query.js'
import * as sql from './sql/index.js'
import type { PgClient } from './types.js'

// idem_inbox keeps no fingerprint: any redelivery of an id is the same message.
const INBOX_RECORD = 'idem-inbox-v1'

/**
 * The inbox's table on Postgres: one narrow `idem_inbox` row per processed message
 * (consumer, key, expiry), claimed with its row already written in the round trip that
 * opens the transaction (READ COMMITTED), so a new message costs one statement more
 * than the handler's own and its commit is a bare COMMIT; failure counts in
 * `idem_inbox_attempts`, dead letters in `idem_dead_letters`.
 */
export function postgresInboxTable(settings: Settings): InboxTable<PgClient> {
  const { pool, schema } = settings
  const sessions = keySessions(settings, sql.inboxTable(schema))

  async function run(tx: PgClient, statement: sql.Statement) {
    try {
      return await tx.query(statement.text, statement.values)
    } catch (error) {
      throw classifyPgError(error, schema)
    }
  }

  return {
    async begin({ consumer, key, waitMs, retentionMs }): Promise<InboxSession<PgClient>> {
      const session = await sessions.begin({ scope: consumer, key, waitMs, record: { fingerprint: INBOX_RECORD, ttlMs: retentionMs } })
      const { state } = session.claim
      // Nothing was written: ending it need not delay the answer (rollback never rejects).
      if (state !== 'new') void session.rollback()
      return {
        state: state === 'new' ? 'new' : state === 'found' ? 'processed' : state === 'locked' ? 'in-flight' : 'stale',
        tx: session.tx,
        async takeFailures() {
          const { rows } = await run(session.tx, sql.inboxAttemptTake(schema, consumer, key))
          const row = rows[0] as { attempts: number; last_error: string; first_failed_at: Date } | undefined
          return row && { attempts: row.attempts, lastError: row.last_error, firstFailedAt: row.first_failed_at }
        },
        async deadLetter(letter) {
          await run(session.tx, sql.deadLetterInsert(schema, 'inbox', consumer, key, letter.payload, letter.attempts, letter.error, letter.firstSeenAt ?? null))
        },
        commit: () => session.commit({ fingerprint: INBOX_RECORD, outcome: 'null', ttlMs: retentionMs }),
        rollback: () => session.rollback(),
        ...(session.abandon === undefined ? {} : { abandon: () => session.abandon!() }),
        lost: () => session.lost?.(),
      }
    },
    async recordFailure(consumer, key, error) {
      // One upsert, atomic by itself: concurrent failures of a message each count once.
      const { rows } = await queryOnPool(pool, schema, sql.inboxAttemptRecord(schema, consumer, key, error))
      return (rows[0] as { attempts: number }).attempts
    },
  }
}
