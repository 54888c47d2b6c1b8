/**
 * What the dispatcher's users see: the rows and context a deliverer gets, what a round
 * did, the options and the `Dispatcher` itself. `../dispatcher.ts` exports them with
 * `createDispatcher`; the dispatcher's parts in this folder import them from here.
 */
import type { Backoff } from '../../core/backoff.js'
import type { EventStream } from '../../core/events.js'
import type { WithOutboxTable } from '../../ports/outbox-table.js'

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
