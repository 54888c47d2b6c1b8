import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { MigrationRequiredError } from '../core/errors/migration-required.js'
import { classifyPgError } from '../stores/postgres/errors.js'
import * as pgSql from '../stores/postgres/sql.js'
import * as sqliteSql from '../stores/sqlite/sql.js'
import type { SqliteStatement } from '../stores/sqlite/types.js'
import { assertDuration, assertName } from '../core/validate.js'
import { isPg, isSqlite, type PgQueryable, type SqliteDatabase } from './types.js'

/** One effect to deliver later: a publish, an email, a webhook call. */
export interface OutboxEntry {
  /** Where it goes (a subject, a queue, "email"): the dispatcher's deliverer routes on it. 1–200 characters. */
  topic: string
  /** What is delivered: any JSON value. */
  payload: unknown
  /**
   * A stable key for this effect, passed to the deliverer so the receiving side can
   * drop duplicates (NATS `Nats-Msg-Id`, an email provider's idempotency key). Derive it
   * from the intent (`claim-received:<claimId>`), never mint it per attempt. 1–255
   * characters. A second add with the same topic and key is ignored.
   */
  dedupeKey: string
  /** Deliver no sooner than this many milliseconds after commit. @default 0 */
  delayMs?: number
}

export interface OutboxOptions {
  /** Postgres: the schema the store was migrated in. @default 'public' */
  schema?: string
}

export interface Outbox {
  /**
   * Queues `entry` in the caller's transaction: it commits with the caller's other
   * writes or not at all, so "the effect is owed" and "the state changed" never
   * disagree. Pass the pg client of your open transaction (inside `idem.run` or
   * `inbox.consume`, the `tx` you were given); with better-sqlite3 the call is
   * synchronous and refuses to run outside a transaction.
   * @returns true when queued now, false when `(topic, dedupeKey)` was already queued
   * @throws InvalidOptionError for a malformed entry; MigrationRequiredError when idem_outbox is missing
   */
  add(tx: SqliteDatabase, entry: OutboxEntry): boolean
  add(tx: PgQueryable, entry: OutboxEntry): Promise<boolean>
}

const MAX_DEDUPE_KEY_LENGTH = 255

/**
 * The transactional outbox: effects queued inside a transaction, delivered after
 * commit by a dispatcher (`createDispatcher`). Needs the store's migration (version 3).
 *
 * @example
 * const outbox = createOutbox({ schema: 'public' })
 * await inbox.consume(message, async (tx) => {
 *   await tx.query('INSERT INTO claims …')
 *   await outbox.add(tx, { topic: 'email', payload: { to, template: 'claim-received' }, dedupeKey: `claim-received:${claimId}` })
 * })
 * @see docs/queue.md
 */
export function createOutbox({ schema = 'public' }: OutboxOptions = {}): Outbox {
  try {
    pgSql.quoteSchema(schema)
  } catch (cause) {
    throw new InvalidOptionError(`createOutbox: option "schema": ${(cause as Error).message}`, { cause })
  }
  const prepared = new WeakMap<SqliteDatabase, SqliteStatement>()

  function add(tx: SqliteDatabase, entry: OutboxEntry): boolean
  function add(tx: PgQueryable, entry: OutboxEntry): Promise<boolean>
  function add(tx: SqliteDatabase | PgQueryable, entry: OutboxEntry): boolean | Promise<boolean> {
    const { topic, dedupeKey, payload, delayMs } = checkEntry(entry)
    if (isSqlite(tx)) {
      if (!tx.inTransaction) {
        throw new InvalidOptionError(
          'outbox.add: "tx" is a Database with no open transaction; add inside the transaction whose writes the effect follows',
        )
      }
      let statement = prepared.get(tx)
      if (statement === undefined) {
        try {
          prepared.set(tx, (statement = tx.prepare(sqliteSql.outboxInsert)))
        } catch (error) {
          throw missingTable(error)
        }
      }
      const now = Date.now()
      return statement.run(topic, dedupeKey, payload, now + delayMs, now).changes === 1
    }
    if (isPg(tx)) return addPg(tx, topic, dedupeKey, payload, delayMs)
    throw new InvalidOptionError('outbox.add: "tx" must be a pg client in a transaction or a better-sqlite3 Database')
  }

  async function addPg(tx: PgQueryable, topic: string, dedupeKey: string, payload: string, delayMs: number): Promise<boolean> {
    const statement = pgSql.outboxInsert(schema, topic, dedupeKey, payload, delayMs)
    try {
      return ((await tx.query(statement.text, statement.values)).rowCount ?? 0) === 1
    } catch (error) {
      throw classifyPgError(error, schema)
    }
  }

  return { add }
}

function checkEntry(entry: OutboxEntry): { topic: string; dedupeKey: string; payload: string; delayMs: number } {
  if (entry === null || typeof entry !== 'object') throw new InvalidOptionError('outbox.add: pass { topic, payload, dedupeKey }')
  assertName('outbox.add: "topic"', entry.topic)
  assertName('outbox.add: "dedupeKey"', entry.dedupeKey, MAX_DEDUPE_KEY_LENGTH)
  const delayMs = entry.delayMs ?? 0
  assertDuration('outbox.add: "delayMs"', delayMs, 0)
  let payload: string | undefined
  try {
    payload = JSON.stringify(entry.payload)
  } catch (cause) {
    throw new InvalidOptionError(`outbox.add: "payload" must be JSON data: ${(cause as Error).message}`, { cause })
  }
  if (payload === undefined) throw new InvalidOptionError('outbox.add: "payload" must be JSON data (got undefined)')
  return { topic: entry.topic, dedupeKey: entry.dedupeKey, payload, delayMs }
}

/** Maps better-sqlite3's "no such table" to MigrationRequiredError. */
export function missingTable(error: unknown): unknown {
  if (error instanceof Error && /no such table: idem_/.test(error.message)) {
    return new MigrationRequiredError(
      `idem's queue tables are missing in SQLite (${error.message}). Run the migration: \`sqliteStore({ db }).migrate()\``,
      { cause: error },
    )
  }
  return error
}
