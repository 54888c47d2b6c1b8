import { randomUUID } from 'node:crypto'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { classifyPgError } from '../stores/postgres/errors.js'
import { warnWithoutConnectTimeout } from '../stores/postgres/pool-timeout.js'
import * as pgSql from '../stores/postgres/sql.js'
import * as sqliteSql from '../stores/sqlite/sql.js'
import { inTurn } from '../stores/sqlite/writer.js'
import { backoffDelay, type Backoff } from './backoff.js'
import { assertCount, assertDuration, assertName } from '../core/validate.js'
import { missingTable } from './outbox.js'
import { errorText } from './payload.js'
import { isPg, isSqlite, type PgQueryable, type SqliteDatabase } from './types.js'

/** One claimed outbox row, as the deliverer gets it. */
export interface OutboxRow {
  readonly id: string
  readonly topic: string
  readonly payload: unknown
  /** Pass it downstream as the idempotency key / message id: a repeat delivery carries the same one. */
  readonly dedupeKey: string
  /** 1 on the first attempt. */
  readonly attempt: number
  /** The previous attempt's error, on a retry. */
  readonly lastError: string | null
  readonly createdAt: Date
}

export interface DispatchResult {
  claimed: number
  delivered: number
  retried: number
  deadLettered: number
}

export interface DispatcherOptions {
  /** Postgres: a `pg.Pool` (each statement is its own short transaction). */
  pool?: PgQueryable
  /** SQLite: the better-sqlite3 `Database` (the same connection the store uses is fine). */
  db?: SqliteDatabase
  /** Postgres schema. @default 'public' */
  schema?: string
  /** Delivers one row; resolve when the receiver has it, throw to retry. Gets the dedupe key on `row.dedupeKey`. */
  deliver: (row: OutboxRow) => Promise<void>
  /** Rows claimed (and delivered concurrently) per round. @default 50 */
  batchSize?: number
  /** Attempts before a row moves to idem_dead_letters with its last error. @default 10 */
  maxAttempts?: number
  /** Delay before a retry: exponential with full jitter. @default { baseMs: 1000, maxMs: 300000 } */
  backoff?: Backoff
  /**
   * How long a claim holds its rows. A dispatcher that dies mid-batch has its rows
   * claimed again when the lease runs out; a delivery still running then is abandoned
   * (counted as failed), so the row is not sent twice at once. @default 60000
   */
  leaseMs?: number
  /** Idle wait between rounds when nothing was due (`start`). @default 1000 */
  pollMs?: number
  /** Deliver only these topics (several dispatchers may split the work by topic). @default all */
  topics?: readonly string[]
  /** Errors of the dispatcher itself (the database), reported by `start`'s loop, which goes on. */
  onError?: (error: unknown) => void
}

export interface Dispatcher {
  /** Claims one batch of due rows, delivers them, and records each outcome. */
  runOnce(): Promise<DispatchResult>
  /**
   * Runs rounds until no row is due now, then resolves with the totals. Rows waiting
   * for a retry later are left for later rounds.
   */
  drain(): Promise<DispatchResult>
  /** Rows not yet delivered (due now or waiting for a retry). */
  pending(): Promise<number>
  /** Starts dispatching in the background: rounds back to back while rows are due, else every `pollMs`. */
  start(): void
  /** Stops after the current round. */
  stop(): Promise<void>
}

/** The dialect-specific half: four statements over idem_outbox. */
interface OutboxTable {
  claim(claimId: string, limit: number, leaseMs: number): Promise<ClaimedRow[]>
  delivered(claimId: string, ids: string[]): Promise<void>
  retry(claimId: string, rows: { id: string; delayMs: number; error: string }[]): Promise<void>
  deadLetter(claimId: string, rows: { id: string; error: string }[]): Promise<void>
  pending(): Promise<number>
}

interface ClaimedRow {
  id: string
  topic: string
  dedupe_key: string
  payload: string | unknown
  attempts: number
  last_error: string | null
  created_at: Date | number
}

class LeaseExpired extends Error {
  override readonly name = 'LeaseExpired'
}

/**
 * Creates an outbox dispatcher: it claims due rows (Postgres: `FOR UPDATE SKIP LOCKED`
 * in one short statement, leasing them), hands each to `deliver` with its dedupe key,
 * marks it delivered, retries failures with exponential backoff and full jitter, and
 * after `maxAttempts` moves the row to `idem_dead_letters` with its last error. Several
 * dispatchers, in one process or many, share the work without sending a row twice
 * at once; a repeat after a crash carries the same dedupe key.
 *
 * @throws InvalidOptionError naming the option, at creation
 * @example
 * const dispatcher = createDispatcher({
 *   pool,
 *   deliver: (row) => mail.send(row.payload, { idempotencyKey: row.dedupeKey }),
 *   maxAttempts: 8,
 *   backoff: { baseMs: 500, maxMs: 60_000 },
 * })
 * dispatcher.start()
 * @see docs/queue.md
 */
export function createDispatcher({
  pool,
  db,
  schema = 'public',
  deliver,
  batchSize = 50,
  maxAttempts = 10,
  backoff,
  leaseMs = 60_000,
  pollMs = 1_000,
  topics,
  onError,
}: DispatcherOptions): Dispatcher {
  const caller = 'createDispatcher'
  if ((pool === undefined) === (db === undefined)) throw new InvalidOptionError(`${caller}: pass exactly one of "pool" (Postgres) or "db" (SQLite)`)
  if (typeof deliver !== 'function') throw new InvalidOptionError(`${caller}: option "deliver" must be a function (row) => Promise<void>`)
  assertCount(`${caller}: option "batchSize"`, batchSize, 1, 10_000)
  assertCount(`${caller}: option "maxAttempts"`, maxAttempts, 1, 1_000)
  assertDuration(`${caller}: option "leaseMs"`, leaseMs, 100)
  assertDuration(`${caller}: option "pollMs"`, pollMs, 1)
  if (topics !== undefined) {
    if (!Array.isArray(topics) || topics.length === 0) throw new InvalidOptionError(`${caller}: option "topics" must be a non-empty array of topic names`)
    topics.forEach((t, i) => assertName(`${caller}: option "topics[${i}]"`, t))
  }
  if (onError !== undefined && typeof onError !== 'function') throw new InvalidOptionError(`${caller}: option "onError" must be a function`)
  const delayOf = backoffDelay(backoff, caller)
  let table: OutboxTable
  if (pool !== undefined) {
    if (!isPg(pool)) throw new InvalidOptionError(`${caller}: option "pool" must be a pg.Pool`)
    try {
      pgSql.quoteSchema(schema)
    } catch (cause) {
      throw new InvalidOptionError(`${caller}: option "schema": ${(cause as Error).message}`, { cause })
    }
    warnWithoutConnectTimeout(pool, caller)
    table = postgresTable(pool, schema, topics ?? null)
  } else {
    if (!isSqlite(db)) throw new InvalidOptionError(`${caller}: option "db" must be a better-sqlite3 Database`)
    if (topics !== undefined) throw new InvalidOptionError(`${caller}: option "topics" is supported on Postgres only`)
    table = sqliteTable(db)
  }

  async function runOnce(): Promise<DispatchResult> {
    const claimId = randomUUID()
    const rows = await table.claim(claimId, batchSize, leaseMs)
    const result: DispatchResult = { claimed: rows.length, delivered: 0, retried: 0, deadLettered: 0 }
    if (rows.length === 0) return result
    const delivered: string[] = []
    const retry: { id: string; delayMs: number; error: string }[] = []
    const dead: { id: string; error: string }[] = []
    // Stop waiting for deliveries a little before the lease runs out, so no other
    // dispatcher claims a row this one may still be sending.
    const deadline = Math.max(leaseMs - Math.min(5_000, leaseMs / 5), leaseMs / 2)
    await Promise.all(
      rows.map(async (claimed) => {
        const row = toRow(claimed)
        if (row.attempt > maxAttempts) {
          // Claimed maxAttempts times without an outcome: earlier dispatchers died or timed out mid-delivery.
          dead.push({ id: row.id, error: `no outcome after ${maxAttempts} claims (the dispatcher stopped or timed out); last error: ${row.lastError ?? 'none'}` })
          return
        }
        try {
          await withTimeout(deliver(row), deadline)
          delivered.push(row.id)
        } catch (error) {
          const text = errorText(error)
          if (row.attempt >= maxAttempts) dead.push({ id: row.id, error: text })
          else retry.push({ id: row.id, delayMs: delayOf(row.attempt), error: text })
        }
      }),
    )
    if (delivered.length > 0) await table.delivered(claimId, delivered)
    if (retry.length > 0) await table.retry(claimId, retry)
    if (dead.length > 0) await table.deadLetter(claimId, dead)
    result.delivered = delivered.length
    result.retried = retry.length
    result.deadLettered = dead.length
    return result
  }

  async function drain(): Promise<DispatchResult> {
    const total: DispatchResult = { claimed: 0, delivered: 0, retried: 0, deadLettered: 0 }
    for (;;) {
      const round = await runOnce()
      total.claimed += round.claimed
      total.delivered += round.delivered
      total.retried += round.retried
      total.deadLettered += round.deadLettered
      if (round.claimed === 0) return total
    }
  }

  let running: Promise<void> | undefined
  let stopping = false
  let wake: (() => void) | undefined

  function start(): void {
    if (running !== undefined) return
    stopping = false
    running = (async () => {
      while (!stopping) {
        let claimed = 0
        try {
          claimed = (await runOnce()).claimed
        } catch (error) {
          try {
            onError?.(error)
          } catch {
            // A logging hook must not stop dispatching.
          }
        }
        if (claimed < batchSize && !stopping) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, pollMs)
            wake = () => {
              clearTimeout(timer)
              resolve()
            }
          })
          wake = undefined
        }
      }
    })()
  }

  async function stop(): Promise<void> {
    stopping = true
    wake?.()
    await running
    running = undefined
  }

  return { runOnce, drain, pending: () => table.pending(), start, stop }
}

function toRow(claimed: ClaimedRow): OutboxRow {
  return {
    id: String(claimed.id),
    topic: claimed.topic,
    payload: typeof claimed.payload === 'string' ? JSON.parse(claimed.payload) : claimed.payload,
    dedupeKey: claimed.dedupe_key,
    attempt: claimed.attempts,
    lastError: claimed.last_error,
    createdAt: claimed.created_at instanceof Date ? claimed.created_at : new Date(claimed.created_at),
  }
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new LeaseExpired(`delivery took longer than ${Math.round(ms)} ms (the lease would run out)`)), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

function postgresTable(pool: PgQueryable, schema: string, topics: readonly string[] | null): OutboxTable {
  const run = async (statement: pgSql.Statement) => {
    try {
      return await pool.query(statement.text, statement.values)
    } catch (error) {
      throw classifyPgError(error, schema)
    }
  }
  return {
    async claim(claimId, limit, leaseMs) {
      return (await run(pgSql.outboxClaim(schema, limit, claimId, leaseMs, topics))).rows as ClaimedRow[]
    },
    async delivered(claimId, ids) {
      await run(pgSql.outboxDelivered(schema, ids, claimId))
    },
    async retry(claimId, rows) {
      await run(pgSql.outboxRetry(schema, rows.map((r) => r.id), rows.map((r) => r.delayMs), rows.map((r) => r.error), claimId))
    },
    async deadLetter(claimId, rows) {
      await run(pgSql.outboxDeadLetter(schema, rows.map((r) => r.id), rows.map((r) => r.error), claimId))
    },
    async pending() {
      return ((await run(pgSql.outboxPending(schema))).rows[0] as { n: number }).n
    },
  }
}

/** How long a SQLite step waits for its turn on the connection before it fails (the next round retries). */
const SQLITE_TURN_MS = 20_000

/**
 * SQLite has one writer and better-sqlite3 is synchronous, so each step is one
 * synchronous transaction that nothing can interleave with. It takes its turn in the
 * connection's queue (`inTurn`), with the engine's transactions, so it never joins one
 * that is open (an engine call awaiting its handler) and is never starved by a steady
 * stream of them.
 */
function sqliteTable(db: SqliteDatabase): OutboxTable {
  const statements = new Map<string, ReturnType<SqliteDatabase['prepare']>>()
  const prepare = (source: string) => {
    let statement = statements.get(source)
    if (statement === undefined) {
      try {
        statements.set(source, (statement = db.prepare(source)))
      } catch (error) {
        throw missingTable(error)
      }
    }
    return statement
  }
  const atomically = <T>(work: () => T, transaction = true): Promise<T> =>
    inTurn(db, SQLITE_TURN_MS, 'idem dispatcher', work, transaction).catch((error: unknown) => {
      throw missingTable(error)
    })
  return {
    claim: (claimId, limit, leaseMs) =>
      atomically(() => {
        const now = Date.now()
        return prepare(sqliteSql.outboxClaim).all(claimId, now + leaseMs, now + leaseMs, now, limit) as ClaimedRow[]
      }),
    delivered: (claimId, ids) =>
      atomically(() => {
        const now = Date.now()
        for (const id of ids) prepare(sqliteSql.outboxDelivered).run(now, id, claimId)
      }),
    retry: (claimId, rows) =>
      atomically(() => {
        const now = Date.now()
        for (const row of rows) prepare(sqliteSql.outboxRetry).run(now + row.delayMs, row.error, row.id, claimId)
      }),
    deadLetter: (claimId, rows) =>
      atomically(() => {
        const now = Date.now()
        for (const row of rows) {
          prepare(sqliteSql.outboxDeadLetterCopy).run(row.error, now, row.id, claimId)
          prepare(sqliteSql.outboxDeadLetterDelete).run(row.id, claimId)
        }
      }),
    // In turn too (one statement, no transaction): read while an engine call is open, it
    // would count rows that may roll back.
    pending: () => atomically(() => (prepare(sqliteSql.outboxPending).get() as { n: number }).n, false),
  }
}
