import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { MigrationRequiredError } from '../core/errors/migration-required.js'
import { keyId } from '../core/key.js'
import type { Store } from '../core/store.js'
import type { MemoryTx } from '../stores/memory/store.js'
import { classifyPgError } from '../stores/postgres/errors.js'
import * as pgSql from '../stores/postgres/sql.js'
import type { PostgresStore } from '../stores/postgres/store.js'
import type { PgClient } from '../stores/postgres/types.js'
import * as sqliteSql from '../stores/sqlite/sql.js'
import type { SqliteDatabase, SqliteStatement } from '../stores/sqlite/types.js'

/** What earlier attempts at a message left behind. */
export interface PriorFailures {
  attempts: number
  lastError: string
  firstFailedAt: Date
}

export interface DeadLetter {
  consumer: string
  key: string
  /** JSON text of the message body. */
  payload: string
  attempts: number
  error: string
  firstSeenAt: Date | undefined
}

/**
 * The inbox's own rows (failure counts, dead letters) in one store's dialect. Every
 * method runs inside a transaction the engine opened on that store, so these rows
 * commit or roll back with the key record and the handler's effects.
 */
export interface InboxBackend<Tx> {
  /**
   * Where message ids are recorded when not in the engine's own key table: Postgres
   * keeps them in `idem_inbox`, one narrow row each, under the consumer's name
   * (`undefined` for SQLite and memory, which keep them as keys of scope `inbox:<consumer>`).
   */
  readonly ids: Store<Tx> | undefined
  /** Reads and removes a message's failure count; the removal holds only if the transaction commits. */
  takeFailures(tx: Tx, consumer: string, key: string): Promise<PriorFailures | undefined>
  /** Counts one more failure. @returns the failures counted so far */
  recordFailure(tx: Tx, consumer: string, key: string, error: string): Promise<number>
  deadLetter(tx: Tx, letter: DeadLetter): Promise<void>
}

/** Picks the backend for a bundled store (postgres, sqlite, memory). */
export function inboxBackend<Tx>(store: Store<Tx>, caller: string): InboxBackend<Tx> {
  switch (store.name) {
    case 'postgres': {
      const { schema, inboxIds } = store as unknown as Partial<PostgresStore>
      if (typeof schema !== 'string' || inboxIds === undefined) {
        throw new InvalidOptionError(`${caller}: option "store" is named "postgres" but is not from postgresStore(...): the inbox needs its inboxIds`)
      }
      return postgresBackend(schema, inboxIds) as unknown as InboxBackend<Tx>
    }
    case 'sqlite':
      return sqliteBackend() as unknown as InboxBackend<Tx>
    case 'memory':
      return memoryBackend() as unknown as InboxBackend<Tx>
    default:
      throw new InvalidOptionError(
        `${caller}: the inbox keeps failure counts and dead letters in SQL next to the keys, so option "store" must be a postgres, sqlite or memory store (got "${store.name}")`,
      )
  }
}

function postgresBackend(schema: string, ids: Store<PgClient>): InboxBackend<PgClient> {
  const run = async (tx: PgClient, statement: pgSql.Statement) => {
    try {
      return await tx.query(statement.text, statement.values)
    } catch (error) {
      throw classifyPgError(error, schema)
    }
  }
  return {
    ids,
    async takeFailures(tx, consumer, key) {
      const { rows } = await run(tx, pgSql.inboxAttemptTake(schema, consumer, key))
      const row = rows[0] as { attempts: number; last_error: string; first_failed_at: Date } | undefined
      return row && { attempts: row.attempts, lastError: row.last_error, firstFailedAt: row.first_failed_at }
    },
    async recordFailure(tx, consumer, key, error) {
      const { rows } = await run(tx, pgSql.inboxAttemptRecord(schema, consumer, key, error))
      return (rows[0] as { attempts: number }).attempts
    },
    async deadLetter(tx, letter) {
      await run(
        tx,
        pgSql.deadLetterInsert(schema, 'inbox', letter.consumer, letter.key, letter.payload, letter.attempts, letter.error, letter.firstSeenAt ?? null),
      )
    },
  }
}

// Prepared once per database: the failure check sits on the hot path of redeliveries.
const prepared = new WeakMap<SqliteDatabase, Map<string, SqliteStatement>>()

function sqliteStatement(db: SqliteDatabase, source: string): SqliteStatement {
  let statements = prepared.get(db)
  if (statements === undefined) prepared.set(db, (statements = new Map()))
  let statement = statements.get(source)
  if (statement === undefined) {
    try {
      statement = db.prepare(source)
    } catch (error) {
      if (error instanceof Error && /no such table: idem_/.test(error.message)) {
        throw new MigrationRequiredError(
          `idem's queue tables are missing in SQLite (${error.message}). Run the migration: \`sqliteStore({ db }).migrate()\``,
          { cause: error },
        )
      }
      throw error
    }
    statements.set(source, statement)
  }
  return statement
}

function sqliteBackend(): InboxBackend<SqliteDatabase> {
  return {
    ids: undefined,
    async takeFailures(db, consumer, key) {
      const row = sqliteStatement(db, sqliteSql.inboxAttemptTake).get(consumer, key) as
        | { attempts: number; last_error: string; first_failed_at: number }
        | undefined
      return row && { attempts: row.attempts, lastError: row.last_error, firstFailedAt: new Date(row.first_failed_at) }
    },
    async recordFailure(db, consumer, key, error) {
      const now = Date.now()
      return (sqliteStatement(db, sqliteSql.inboxAttemptRecord).get(consumer, key, error, now, now) as { attempts: number }).attempts
    },
    async deadLetter(db, letter) {
      const now = Date.now()
      sqliteStatement(db, sqliteSql.deadLetterInsert).run(
        'inbox',
        letter.consumer,
        letter.key,
        letter.payload,
        letter.attempts,
        letter.error,
        letter.firstSeenAt?.getTime() ?? now,
        now,
      )
    },
  }
}

/** The collections the memory store keeps the inbox's rows in (read them with `store.collection(name)`). */
export const MEMORY_ATTEMPTS = 'idem_inbox_attempts'
export const MEMORY_DEAD_LETTERS = 'idem_dead_letters'

function memoryBackend(): InboxBackend<MemoryTx> {
  let sequence = 0
  return {
    ids: undefined,
    async takeFailures(tx, consumer, key) {
      const row = tx.get(MEMORY_ATTEMPTS, keyId(consumer, key)) as PriorFailures | null | undefined
      if (row === undefined || row === null) return undefined
      tx.set(MEMORY_ATTEMPTS, keyId(consumer, key), null)
      return row
    },
    async recordFailure(tx, consumer, key, error) {
      const row = tx.get(MEMORY_ATTEMPTS, keyId(consumer, key)) as PriorFailures | null | undefined
      const attempts = (row?.attempts ?? 0) + 1
      tx.set(MEMORY_ATTEMPTS, keyId(consumer, key), { attempts, lastError: error, firstFailedAt: row?.firstFailedAt ?? new Date() })
      return attempts
    },
    async deadLetter(tx, letter) {
      tx.set(MEMORY_DEAD_LETTERS, `${++sequence}:${letter.consumer}:${letter.key}`, { source: 'inbox', ...letter })
    },
  }
}
