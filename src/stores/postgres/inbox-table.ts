import type { InboxDeadLetter, InboxSession, InboxTable, PriorFailures } from '../../ports/inbox-table.js'
import { settledInboxSession } from '../settled-inbox-session.js'
import { classifyPgError } from './driver/errors.js'
import { checkOut, endClient, type HeldClient } from './driver/held-client.js'
import type { Settings } from './key-sessions/index.js'
import { queryOnPool } from './driver/pool-query.js'
import * as sql from './dialect/index.js'
import type { PgClient, PgPoolClient } from './driver/types.js'
import { wireFor, type Step, type Wire } from './driver/wire.js'

/**
 * The inbox's table on Postgres: one narrow `idem_inbox` row per processed message
 * (consumer, key, expiry), claimed with its row already written in the round trip that
 * opens the transaction (READ COMMITTED), so a new message costs one statement more
 * than the handler's own and its commit is a bare COMMIT; failure counts in
 * `idem_inbox_attempts`, dead letters in `idem_dead_letters`. Its statements are built
 * once, with the store; a message costs a checkout, its round trips and one session.
 */
export function postgresInboxTable(settings: Settings): InboxTable<PgClient> {
  const { pool, schema, isolation, preparedStatements } = settings
  const statements = sql.inboxStatements(schema)
  const context: Context = {
    schema,
    statements,
    wire: wireFor(preparedStatements),
    begin: { statement: sql.begin(isolation) },
    // A stricter level keeps the usual claim, which handles its stale snapshots.
    marks: isolation === 'read committed',
  }

  return {
    async begin({ consumer, key, waitMs, retentionMs }): Promise<InboxSession<PgClient>> {
      const client = await checkOut(pool, schema)
      let state: string | undefined
      let marked = false
      try {
        if (context.marks) {
          const [, mark] = await context.wire.send(client, [context.begin, { statement: statements.mark, values: [consumer, key, retentionMs] }], 'opens')
          if (mark!.rowCount === 1) marked = true
          // A recorded id, or another delivery holding it: claimed the usual way, in the same transaction.
          else state = stateOf((await context.wire.send(client, [{ statement: statements.claim, values: [consumer, key, waitMs] }], 'inside'))[0]!)
        } else {
          const [, claim] = await context.wire.send(client, [context.begin, { statement: statements.claim, values: [consumer, key, waitMs] }], 'opens')
          state = stateOf(claim!)
        }
      } catch (error) {
        await endClient(client, error)
        throw classifyPgError(error, schema)
      }
      if (marked || state === 'new') return new ClaimedSession(context, client, consumer, key, retentionMs, marked)
      // Nothing was written: ending it need not delay the answer (it never rejects).
      void endClient(client)
      return settledInboxSession(state === 'found' ? 'processed' : state === 'locked' ? 'in-flight' : 'stale', client.client)
    },
    async recordFailure(consumer, key, error) {
      // One upsert, atomic by itself: concurrent failures of a message each count once.
      const { rows } = await queryOnPool(pool, schema, { text: statements.recordFailure, values: [consumer, key, error] })
      return (rows[0] as { attempts: number }).attempts
    },
  }
}

/** What every session of one table shares. */
interface Context {
  readonly schema: string
  readonly statements: sql.InboxStatements
  readonly wire: Wire
  /** BEGIN at the store's isolation level, the first step of every claim's round trip. */
  readonly begin: Step
  /** Whether a claim writes its row at once (`mark`). */
  readonly marks: boolean
}

/** A message this delivery holds: its transaction, open on a client of its own until commit or rollback. */
class ClaimedSession implements InboxSession<PgPoolClient> {
  readonly state = 'new'
  readonly tx: PgPoolClient
  #ended = false

  constructor(
    readonly context: Context,
    readonly client: HeldClient,
    readonly consumer: string,
    readonly key: string,
    readonly retentionMs: number,
    /** The claim wrote the id's row already: the commit is a bare COMMIT. */
    readonly marked: boolean,
  ) {
    this.tx = client.client
  }

  async takeFailures(): Promise<PriorFailures | undefined> {
    const { rows } = await this.#run(this.context.statements.takeFailures, [this.consumer, this.key])
    const row = rows[0] as { attempts: number; last_error: string; first_failed_at: Date } | undefined
    return row && { attempts: row.attempts, lastError: row.last_error, firstFailedAt: row.first_failed_at }
  }

  async deadLetter(letter: InboxDeadLetter): Promise<void> {
    const { text, values } = sql.deadLetterInsert(this.context.schema, 'inbox', this.consumer, this.key, letter.payload, letter.attempts, letter.error, letter.firstSeenAt ?? null)
    await this.#run(text, values)
  }

  async commit(): Promise<void> {
    this.#ended = true
    const { client } = this
    try {
      const { context } = this
      await context.wire.send(client, this.marked ? COMMIT_ONLY : [{ statement: context.statements.save, values: [this.consumer, this.key, this.retentionMs] }, COMMIT], 'inside')
    } catch (error) {
      await endClient(client, error)
      throw classifyPgError(error, this.context.schema)
    }
    client.release()
  }

  async rollback(): Promise<void> {
    if (this.#ended) return
    this.#ended = true
    await endClient(this.client)
  }

  // The handler may still be using the client: it is closed, not returned to the pool.
  async abandon(): Promise<void> {
    if (this.#ended) return
    this.#ended = true
    await this.client.abandon()
  }

  lost(): Error | undefined {
    return this.client.lost
  }

  async #run(text: string, values: unknown[]) {
    try {
      return await this.tx.query(text, values)
    } catch (error) {
      throw classifyPgError(error, this.context.schema)
    }
  }
}

const COMMIT = { statement: sql.COMMIT }
const COMMIT_ONLY = [COMMIT]

/** The state `idem_inbox_claim` returned. */
function stateOf(result: { rows: unknown[] }): string {
  const state = (result.rows[0] as { state?: unknown } | undefined)?.state
  if (state === 'new' || state === 'found' || state === 'locked' || state === 'stale') return state
  throw new Error(`idem_inbox_claim returned an unexpected row: ${JSON.stringify(result.rows[0])}`)
}
