import { randomUUID } from 'node:crypto'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { LeaseLostError } from '../core/errors/lease-lost.js'
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

/** What the dispatcher passes a deliverer with each row. */
export interface DeliveryContext {
  /**
   * Fires at the attempt's deadline, a little before its lease would run out (`leaseMs`
   * less min(5 s, leaseMs / 5), counted from the claim); `signal.reason` is a
   * `DOMException` named `TimeoutError`. Pass it to the client (`fetch(url, { signal })`,
   * the AWS SDK's `abortSignal`) and settle soon after it fires: the row is offered again
   * only once this attempt has settled, so a delivery that ignores the signal holds its
   * row (the dispatcher keeps renewing the lease) for as long as it runs. It also fires,
   * with a `LeaseLostError`, if the lease could not be renewed for a whole `leaseMs` or
   * another dispatcher took the row over.
   */
  readonly signal: AbortSignal
}

/**
 * Delivers one row: resolve when the receiver has it, throw to retry. Pass
 * `row.dedupeKey` downstream and `context.signal` to the client.
 */
export type Deliverer = (row: OutboxRow, context: DeliveryContext) => Promise<void>

export interface DispatchResult {
  claimed: number
  delivered: number
  retried: number
  deadLettered: number
  /**
   * Deliveries still running at the deadline (their signal has fired). Their rows stay
   * leased to this dispatcher, which renews the lease in the background and records each
   * outcome when the delivery settles; `stop()` waits for them.
   */
  overdue: number
}

export interface DispatcherOptions {
  /** Postgres: a `pg.Pool` (each statement is its own short transaction). */
  pool?: PgQueryable
  /** SQLite: the better-sqlite3 `Database` (the same connection the store uses is fine). */
  db?: SqliteDatabase
  /** Postgres schema. @default 'public' */
  schema?: string
  /**
   * Delivers one row; resolve when the receiver has it, throw to retry. Gets the dedupe
   * key on `row.dedupeKey` and, as its second argument, `{ signal }`, which fires at the
   * attempt's deadline (see `DeliveryContext`).
   */
  deliver: Deliverer
  /**
   * Rows claimed (and delivered concurrently) per round. Overdue deliveries from earlier
   * rounds do not count, so one hung receiver call does not hold up other rows (a row
   * has one attempt at a time, so they never outnumber the undelivered rows). @default 50
   */
  batchSize?: number
  /** Attempts before a row moves to idem_dead_letters with its last error. @default 10 */
  maxAttempts?: number
  /** Delay before a retry: exponential with full jitter. @default { baseMs: 1000, maxMs: 300000 } */
  backoff?: Backoff
  /**
   * How long a claim holds its rows without renewal. Each delivery has until a little
   * before then (`leaseMs` less min(5 s, leaseMs / 5)), when its signal fires; while it
   * is still running the dispatcher renews its row's lease every `leaseMs / 3`, so no
   * dispatcher can claim the row until the delivery has settled. A dispatcher that dies
   * stops renewing: its rows are claimed again once the lease runs out. @default 60000
   */
  leaseMs?: number
  /** Idle wait between rounds when nothing was due (`start`). @default 1000 */
  pollMs?: number
  /** Deliver only these topics (several dispatchers may split the work by topic). @default all */
  topics?: readonly string[]
  /**
   * Errors of the dispatcher itself (the database): a failed round of `start`'s loop,
   * which goes on; and, from the background work for overdue deliveries, a failed lease
   * renewal or outcome write and a lease lost while its delivery still runs (a
   * `LeaseLostError`). Without it, the background ones go to `console.warn`.
   */
  onError?: (error: unknown) => void
}

export interface Dispatcher {
  /**
   * Claims one batch of due rows, delivers them, and records each outcome. Resolves once
   * every delivery has settled, or at the deadline: then the stragglers' signals fire,
   * and those still running are counted as `overdue`, kept leased, and recorded in the
   * background when they settle.
   */
  runOnce(): Promise<DispatchResult>
  /**
   * Runs rounds until no row is due now, then resolves with the totals. Rows waiting
   * for a retry later, and rows of overdue deliveries (still leased), are left for
   * later rounds.
   */
  drain(): Promise<DispatchResult>
  /** Rows not yet delivered (due now or waiting for a retry). */
  pending(): Promise<number>
  /** Starts dispatching in the background: rounds back to back while rows are due, else every `pollMs`. */
  start(): void
  /**
   * Stops after the current round, and resolves once every delivery this dispatcher
   * started (overdue ones included) has settled and its outcome is recorded, so no row
   * is left mid-send. A deliverer that never settles keeps it waiting; exiting the
   * process instead is a crash: its rows are claimed again when their leases run out.
   */
  stop(): Promise<void>
}

/** The dialect-specific half: the statements over idem_outbox. */
interface OutboxTable {
  claim(claimId: string, limit: number, leaseMs: number): Promise<ClaimedRow[]>
  /** @returns the ids this claim still held, now leased `leaseMs` from now */
  renew(claimId: string, ids: string[], leaseMs: number): Promise<Set<string>>
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


/**
 * Creates an outbox dispatcher: it claims due rows (Postgres: `FOR UPDATE SKIP LOCKED`
 * in one short statement, leasing them), hands each to `deliver` with its dedupe key
 * and an abort signal, marks it delivered, retries failures with exponential backoff
 * and full jitter, and after `maxAttempts` moves the row to `idem_dead_letters` with its
 * last error. Several dispatchers, in one process or many, share the work and never
 * send one row twice at once: a row is offered again only after its attempt has settled
 * (the outcome is recorded under the claim that made it) or, if its dispatcher died,
 * after the lease it last renewed has run out. A repeat after a crash carries the same
 * dedupe key.
 *
 * Each attempt's signal fires at its deadline, a little before the lease would end. A
 * delivery still running then is not given up on (giving up on waiting does not stop
 * it sending): the dispatcher keeps renewing the row's lease until it settles and then
 * records its outcome, while `runOnce` returns and later rounds go on with other rows.
 *
 * @throws InvalidOptionError naming the option, at creation
 * @example
 * const dispatcher = createDispatcher({
 *   pool,
 *   deliver: (row, { signal }) => mail.send(row.payload, { idempotencyKey: row.dedupeKey, signal }),
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
  if (typeof deliver !== 'function') throw new InvalidOptionError(`${caller}: option "deliver" must be a function (row, { signal }) => Promise<void>`)
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

  // The margin leaves the deliverer time to wind down, and the renewal time to land,
  // before the lease ends.
  const deadlineMs = leaseMs - Math.min(5_000, leaseMs / 5)
  // Three renewals per lease: one that fails still leaves time for the next.
  const renewEveryMs = Math.max(1, Math.floor(leaseMs / 3))

  // Background work nobody awaits (a failed renewal, a late outcome that could not be
  // written) would otherwise vanish; the round's own errors reach the caller instead.
  const report = (error: unknown): void => {
    if (onError === undefined) {
      console.warn(`idem ${caller}: ${errorText(error)}`)
      return
    }
    try {
      onError(error)
    } catch {
      // A logging hook must not break the dispatcher.
    }
  }

  /** Recording of overdue deliveries' outcomes, once they settle: `stop()` waits for these. */
  const overdue = new Set<Promise<void>>()

  function attemptDelivery(row: OutboxRow, hold: ClaimHold): Attempt {
    const controller = new AbortController()
    const attempt: Attempt = { row, controller, outcome: undefined, settled: Promise.resolve() }
    hold.add(row.id, controller)
    // Called inside an async function so that a deliverer that throws synchronously fails its attempt, not the round.
    attempt.settled = (async () => deliver(row, { signal: controller.signal }))().then(
      () => {
        attempt.outcome = { failed: false }
        hold.release(row.id)
      },
      (error: unknown) => {
        attempt.outcome = { failed: true, error }
        hold.release(row.id)
      },
    )
    return attempt
  }

  function classify(attempt: Attempt, into: Outcomes): void {
    const { row, outcome } = attempt
    if (!outcome!.failed) {
      into.delivered.push(row.id)
      return
    }
    const text = errorText(outcome!.error)
    if (row.attempt >= maxAttempts) into.dead.push({ id: row.id, error: text })
    else into.retry.push({ id: row.id, delayMs: delayOf(row.attempt), error: text })
  }

  async function write(claimId: string, outcomes: Outcomes): Promise<void> {
    if (outcomes.delivered.length > 0) await table.delivered(claimId, outcomes.delivered)
    if (outcomes.retry.length > 0) await table.retry(claimId, outcomes.retry)
    if (outcomes.dead.length > 0) await table.deadLetter(claimId, outcomes.dead)
  }

  function finishLater(claimId: string, attempt: Attempt): void {
    const recorded = attempt.settled
      .then(() => {
        const outcomes = emptyOutcomes()
        classify(attempt, outcomes)
        return write(claimId, outcomes)
      })
      .catch(report)
      .finally(() => overdue.delete(recorded))
    overdue.add(recorded)
  }

  /** Rounds under way, manual `runOnce` calls included: `stop()` waits for these too. */
  const rounds = new Set<Promise<DispatchResult>>()

  function runOnce(): Promise<DispatchResult> {
    const round = runRound()
    rounds.add(round)
    const forget = () => void rounds.delete(round)
    round.then(forget, forget)
    return round
  }

  async function runRound(): Promise<DispatchResult> {
    const claimId = randomUUID()
    // Taken before the claim is sent: the database starts the lease later, so it lasts at least until this plus leaseMs.
    const sentAt = performance.now()
    const rows = await table.claim(claimId, batchSize, leaseMs)
    const result: DispatchResult = { claimed: rows.length, delivered: 0, retried: 0, deadLettered: 0, overdue: 0 }
    if (rows.length === 0) return result
    // The deliverers' time counts from when they get the rows (a claim may have waited
    // for a connection); if that makes the deadline late, the hold's expiry fires first.
    const deadline = performance.now() + deadlineMs
    const outcomes = emptyOutcomes()
    const hold = new ClaimHold(table, claimId, leaseMs, renewEveryMs, sentAt, report)
    const attempts: Attempt[] = []
    for (const claimed of rows) {
      const row = toRow(claimed)
      if (row.attempt > maxAttempts) {
        // Claimed maxAttempts times without an outcome: each dispatcher that claimed it died (or lost the database) mid-delivery.
        outcomes.dead.push({ id: row.id, error: `no outcome after ${maxAttempts} claims (each dispatcher that claimed it stopped before recording one); last error: ${row.lastError ?? 'none'}` })
        continue
      }
      attempts.push(attemptDelivery(row, hold))
    }
    await settledOrDeadline(attempts, deadline)
    const late = attempts.filter((attempt) => attempt.outcome === undefined)
    if (late.length > 0) {
      for (const { controller } of late) {
        controller.abort(new DOMException(`The delivery passed its deadline, ${Math.round(deadlineMs)} ms after the claim (the lease is ${leaseMs} ms)`, 'TimeoutError'))
      }
      // A deliverer that gives up as soon as its signal fires settles within this turn:
      // its outcome is written with the round's instead of later on its own.
      await new Promise((resolve) => setImmediate(resolve))
    }
    for (const attempt of attempts) {
      if (attempt.outcome !== undefined) classify(attempt, outcomes)
      else {
        result.overdue++
        finishLater(claimId, attempt)
      }
    }
    await write(claimId, outcomes)
    result.delivered = outcomes.delivered.length
    result.retried = outcomes.retry.length
    result.deadLettered = outcomes.dead.length
    return result
  }

  async function drain(): Promise<DispatchResult> {
    const total: DispatchResult = { claimed: 0, delivered: 0, retried: 0, deadLettered: 0, overdue: 0 }
    for (;;) {
      const round = await runOnce()
      total.claimed += round.claimed
      total.delivered += round.delivered
      total.retried += round.retried
      total.deadLettered += round.deadLettered
      total.overdue += round.overdue
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
    // Returning earlier would let the caller exit mid-send: the outcome would be lost and the row sent again.
    while (rounds.size > 0 || overdue.size > 0) await Promise.allSettled([...rounds, ...overdue])
  }

  return { runOnce, drain, pending: () => table.pending(), start, stop }
}

/** One delivery of one claimed row. */
interface Attempt {
  readonly row: OutboxRow
  readonly controller: AbortController
  /** Resolves (never rejects) once the delivery has settled and `outcome` is set. */
  settled: Promise<void>
  outcome: { failed: false } | { failed: true; error: unknown } | undefined
}

interface Outcomes {
  delivered: string[]
  retry: { id: string; delayMs: number; error: string }[]
  dead: { id: string; error: string }[]
}

const emptyOutcomes = (): Outcomes => ({ delivered: [], retry: [], dead: [] })

async function settledOrDeadline(attempts: Attempt[], deadline: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      Promise.all(attempts.map((attempt) => attempt.settled)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, deadline - performance.now()))
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Keeps one claim's rows leased while their deliveries run (renewing every `everyMs`),
 * and stops once none runs. Mirrors the leased engine's heartbeat, for a batch of rows:
 *
 * - A renewal that finds a running row no longer held by the claim means another
 *   dispatcher took it over: that delivery's signal fires and the loss is reported,
 *   since the row may now be sent twice at once.
 * - When no renewal has been confirmed for a whole lease (the database is down or
 *   slow), the lease may have run out: the running deliveries' signals fire and that is
 *   reported too. Renewal goes on: if nobody took the rows meanwhile, they stay held.
 *
 * The clock is local and monotonic; "confirmed until" counts from when a renewal (or
 * the claim) was sent, so it never outlasts the database's own expiry.
 */
class ClaimHold {
  readonly #running = new Map<string, AbortController>()
  readonly #table: OutboxTable
  readonly #claimId: string
  readonly #leaseMs: number
  readonly #report: (error: unknown) => void
  readonly #interval: NodeJS.Timeout
  #expiry: NodeJS.Timeout
  #confirmedUntil: number
  #renewing = false
  #stopped = false

  constructor(table: OutboxTable, claimId: string, leaseMs: number, everyMs: number, claimSentAt: number, report: (error: unknown) => void) {
    this.#table = table
    this.#claimId = claimId
    this.#leaseMs = leaseMs
    this.#report = report
    this.#confirmedUntil = claimSentAt + leaseMs
    this.#expiry = this.#armExpiry()
    this.#interval = setInterval(() => this.#renew(), everyMs)
    // The deliveries keep the process alive if they do I/O; the renewal alone must not.
    this.#interval.unref()
  }

  add(id: string, controller: AbortController): void {
    this.#running.set(id, controller)
  }

  /** The delivery of `id` settled: its outcome write, not a renewal, decides the row now. */
  release(id: string): void {
    this.#running.delete(id)
    if (this.#running.size === 0) this.#stop()
  }

  #stop(): void {
    this.#stopped = true
    clearInterval(this.#interval)
    clearTimeout(this.#expiry)
  }

  #renew(): void {
    if (this.#running.size === 0) this.#stop()
    // One renewal at a time: a slow database must not pile up statements.
    if (this.#stopped || this.#renewing) return
    this.#renewing = true
    const ids = [...this.#running.keys()]
    const sentAt = performance.now()
    this.#table.renew(this.#claimId, ids, this.#leaseMs).then(
      (renewed) => {
        this.#renewing = false
        if (this.#stopped) return
        if (renewed.size > 0) {
          this.#confirmedUntil = Math.max(this.#confirmedUntil, sentAt + this.#leaseMs)
          clearTimeout(this.#expiry)
          this.#expiry = this.#armExpiry()
        }
        for (const id of ids) {
          const controller = this.#running.get(id)
          // Settled meanwhile (its outcome may have been written first), or still held.
          if (controller === undefined || renewed.has(id)) continue
          this.#running.delete(id)
          const lost = new LeaseLostError(`outbox claim ${this.#claimId}: row ${id} was claimed by another dispatcher while its delivery still runs`)
          controller.abort(lost)
          this.#report(lost)
        }
        if (this.#running.size === 0) this.#stop()
      },
      (error: unknown) => {
        // Retried at the next tick; the expiry timer decides when the lease may be gone.
        this.#renewing = false
        this.#report(error)
      },
    )
  }

  #armExpiry(): NodeJS.Timeout {
    const timer = setTimeout(() => {
      if (this.#stopped || this.#running.size === 0) return
      const lost = new LeaseLostError(
        `outbox claim ${this.#claimId}: the lease of row(s) ${[...this.#running.keys()].join(', ')} could not be renewed for ${this.#leaseMs} ms ` +
          'while their delivery still runs; another dispatcher may claim them',
      )
      for (const controller of this.#running.values()) controller.abort(lost)
      this.#report(lost)
    }, Math.max(0, this.#confirmedUntil - performance.now()))
    timer.unref()
    return timer
  }
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
    async renew(claimId, ids, leaseMs) {
      return new Set(((await run(pgSql.outboxRenew(schema, ids, claimId, leaseMs))).rows as { id: string }[]).map((row) => row.id))
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
    renew: (claimId, ids, leaseMs) =>
      atomically(() => {
        const until = Date.now() + leaseMs
        return new Set(ids.filter((id) => prepare(sqliteSql.outboxRenew).run(until, until, id, claimId).changes === 1))
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
