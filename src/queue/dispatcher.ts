import { randomUUID } from 'node:crypto'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { idemEvents, warn, type EventStream } from '../core/events.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, optionNames } from '../core/validate.js'
import { backoffDelay, type Backoff } from '../core/backoff.js'
import { ClaimHold } from './claim-hold.js'
import { outboxTableOf } from './outbox.js'
import type { ClaimedRow, OutboxTable, WithOutboxTable } from '../ports/outbox-table.js'
import { errorText } from './payload.js'

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

/** What one dispatch round did: how many rows it claimed, delivered, retried and dead-lettered, and how many are overdue. */
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

/** What `createDispatcher` takes: the store, the deliverer, batch size, lease, retry and polling. */
export interface DispatcherOptions {
  /** The store whose outbox it delivers (`postgresStore`, `sqliteStore`): the one `createOutbox` queues in. */
  store: WithOutboxTable<unknown, boolean | Promise<boolean>>
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
  /** Deliver only these topics (several dispatchers may split the work by topic; Postgres only). @default all */
  topics?: readonly string[]
  /** Where the dispatcher reports each round and each dead letter. @default the process-wide `idemEvents` */
  events?: EventStream
  /**
   * Errors of the dispatcher itself (the database): a failed round of `start`'s loop,
   * which goes on; and, from the background work for overdue deliveries, a failed lease
   * renewal or outcome write and a lease lost while its delivery still runs (a
   * `LeaseLostError`). Without it, the background ones go to the event stream as
   * warnings (to `console.warn` when nobody listens).
   */
  onError?: (error: unknown) => void
}

/**
 * Sends outbox rows through a deliverer, at least once, in order per key (see
 * `createDispatcher`).
 */
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

const OPTIONS = optionNames<DispatcherOptions>({
  store: true, deliver: true, batchSize: true, maxAttempts: true, backoff: true, leaseMs: true, pollMs: true, topics: true, events: true, onError: true,
})

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
 *   store: postgresStore({ pool }),
 *   deliver: (row, { signal }) => mail.send(row.payload, { idempotencyKey: row.dedupeKey, signal }),
 *   maxAttempts: 8,
 *   backoff: { baseMs: 500, maxMs: 60_000 },
 * })
 * dispatcher.start()
 * @see docs/queue.md
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  assertKnownOptions('createDispatcher', options, OPTIONS)
  const {
    store,
    deliver,
    batchSize = 50,
    maxAttempts = 10,
    backoff,
    leaseMs = 60_000,
    pollMs = 1_000,
    topics,
    events = idemEvents,
    onError,
  } = options
  const caller = 'createDispatcher'
  const table: OutboxTable<unknown, boolean | Promise<boolean>> = outboxTableOf(store, caller)
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
  if (topics !== undefined && !table.filtersTopics) throw new InvalidOptionError(`${caller}: option "topics" is not supported by the ${store.name} store`)
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError(`${caller}: option "events" must be an event stream (createEventStream())`)
  }
  const delayOf = backoffDelay(backoff, caller)

  // The margin leaves the deliverer time to wind down, and the renewal time to land,
  // before the lease ends.
  const deadlineMs = leaseMs - Math.min(5_000, leaseMs / 5)
  // Three renewals per lease: one that fails still leaves time for the next.
  const renewEveryMs = Math.max(1, Math.floor(leaseMs / 3))

  // Background work nobody awaits (a failed renewal, a late outcome that could not be
  // written) would otherwise vanish; the round's own errors reach the caller instead.
  const report = (error: unknown): void => {
    if (onError === undefined) {
      warn(events, { code: 'dispatcher-background-error', source: caller, message: `idem ${caller}: ${errorText(error)}`, cause: error })
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
    if (row.attempt >= maxAttempts) killed(into, row, text)
    else into.retry.push({ id: row.id, delayMs: delayOf(row.attempt), error: text })
  }

  async function write(claimId: string, outcomes: Outcomes): Promise<void> {
    if (outcomes.delivered.length > 0) await table.delivered(claimId, outcomes.delivered)
    if (outcomes.retry.length > 0) await table.retry(claimId, outcomes.retry)
    if (outcomes.dead.length > 0) {
      await table.deadLetter(claimId, outcomes.dead)
      if (events.listening) {
        for (const { row, error } of outcomes.deadRows) {
          events.emit({ type: 'dead-letter', source: 'outbox', name: row.topic, key: row.dedupeKey, attempts: row.attempt, error })
        }
      }
    }
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
    const rows = await table.claim(claimId, batchSize, leaseMs, topics ?? null)
    const result: DispatchResult = { claimed: rows.length, delivered: 0, retried: 0, deadLettered: 0, overdue: 0 }
    if (rows.length === 0) return reported(result, sentAt, rows)
    // The deliverers' time counts from when they get the rows (a claim may have waited
    // for a connection); if that makes the deadline late, the hold's expiry fires first.
    const deadline = performance.now() + deadlineMs
    const outcomes = emptyOutcomes()
    const hold = new ClaimHold(table, claimId, leaseMs, renewEveryMs, sentAt, report)
    const attempts: Attempt[] = []
    for (const claimed of rows) {
      const row = outboxRow(claimed)
      if (row.attempt > maxAttempts) {
        // Claimed maxAttempts times without an outcome: each dispatcher that claimed it died (or lost the database) mid-delivery.
        killed(outcomes, row, `no outcome after ${maxAttempts} claims (each dispatcher that claimed it stopped before recording one); last error: ${row.lastError ?? 'none'}`)
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
    return reported(result, sentAt, rows)
  }

  function reported(result: DispatchResult, started: number, rows: readonly ClaimedRow[]): DispatchResult {
    if (events.listening) {
      const oldest = rows.reduce<number | undefined>((at, row) => Math.min(at ?? Infinity, row.createdAt.getTime()), undefined)
      events.emit({ type: 'dispatch', ...result, lagMs: oldest === undefined ? undefined : Date.now() - oldest, durationMs: performance.now() - started })
    }
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

function killed(into: Outcomes, row: OutboxRow, error: string): void {
  into.dead.push({ id: row.id, error })
  into.deadRows.push({ row, error })
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
  /** The dead rows themselves, for the event stream. */
  deadRows: { row: OutboxRow; error: string }[]
}

const emptyOutcomes = (): Outcomes => ({ delivered: [], retry: [], dead: [], deadRows: [] })

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

function outboxRow(claimed: ClaimedRow): OutboxRow {
  return {
    id: claimed.id,
    topic: claimed.topic,
    payload: claimed.payload,
    dedupeKey: claimed.dedupeKey,
    attempt: claimed.attempts,
    lastError: claimed.lastError,
    createdAt: claimed.createdAt,
  }
}
