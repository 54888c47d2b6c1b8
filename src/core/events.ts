/**
 * The one event stream: every front end (the engines, the HTTP middleware, the inbox,
 * the outbox dispatcher, reconcile) reports what happened to it here, so that a metrics exporter
 * or a logger is one subscriber. Events describe outcomes, never inputs: no bodies, no
 * keys' payloads.
 */

/** One engine call's outcome. */
export type OutcomeKind =
  | 'fresh'
  | 'replayed'
  | 'not-stored'
  | 'in-flight'
  | 'mismatch'
  /** Leased engine: the holder lost its lease (another call took the key over, or renewals failed); nothing more was written under it. */
  | 'lease-lost'
  /** The function still ran at the call's deadline (`deadlineMs`): the key was let go (rolled back, or the lease released) and nothing was stored. */
  | 'overran'
  | 'error'

/** One call of either engine, as the engine's `onOutcome` hook receives it. */
export interface OutcomeEvent {
  kind: OutcomeKind
  scope: string
  /** The store's name. */
  store: string
  /** Milliseconds from the call to its outcome. */
  durationMs: number
  error?: unknown
}

/** An engine call (`createIdem`, `createLeasedIdem`, and the front ends built on them). */
export interface CallEvent extends OutcomeEvent {
  type: 'call'
  engine: 'transactional' | 'leased'
}

/**
 * How the HTTP middleware answered a request it protects:
 * - `fresh`: the route ran and its answer was stored; `replayed`: a stored answer was sent;
 * - `not-stored`: the route ran and its answer (a 5xx, a transient 4xx) was rolled back;
 * - `missing-key`, `invalid-key` (400), `body-too-large` (413), `mismatch` (422),
 *   `in-flight` (409), `lease-lost` (409), `store-unavailable` (503): answered by idem
 *   without running the route (or, for `lease-lost`, without storing its answer);
 * - `overran` (503): the route still ran at `deadlineMs`; idem let its key go (rolled
 *   back, or released the lease) and answered for it (`path` says which route);
 * - `error`: idem answered 500 (missing tables, an outcome it cannot store, a
 *   misconfiguration), or the route threw and the framework answered;
 * - `unprotected`: no key on a route that does not require one; the route answered.
 */
export type HttpOutcome =
  | 'fresh'
  | 'replayed'
  | 'not-stored'
  | 'missing-key'
  | 'invalid-key'
  | 'body-too-large'
  | 'mismatch'
  | 'in-flight'
  | 'lease-lost'
  | 'overran'
  | 'store-unavailable'
  | 'error'
  | 'unprotected'

/** One request on a route the HTTP middleware covers, and how it was answered. */
export interface HttpEvent {
  type: 'http'
  outcome: HttpOutcome
  method: string
  /** The status answered, when idem or the route's stored or replayed answer set it. */
  status?: number
  /** The request's path, on `overran`: which route held its key past the deadline. */
  path?: string
}

/** One message settled by the inbox. */
export interface InboxEvent {
  type: 'inbox'
  consumer: string
  status: 'processed' | 'duplicate' | 'failed' | 'dead-lettered' | 'in-flight' | 'error'
  durationMs: number
  /** Failed attempts so far, for `failed` and `dead-lettered`. */
  attempts?: number
  error?: unknown
}

/** One delivery to a webhook receiver: its signature check, and what became of it. */
export interface WebhookReceiverEvent {
  type: 'webhook'
  /** The receiver's inbox consumer, naming the endpoint (`stripe-webhooks`). */
  consumer: string
  /** The signature: `verified` or `refused` by `verify`, `unchecked` without it. */
  signature: 'verified' | 'refused' | 'unchecked'
  /**
   * What became of it: `refused` (the signature; nothing recorded), `no-event-id`, or the
   * inbox's status once recorded: `processed`, `duplicate` (a redelivery answered without
   * running the handler), `failed`, `dead-lettered`, `in-flight`.
   */
  status: 'refused' | 'no-event-id' | 'processed' | 'duplicate' | 'failed' | 'dead-lettered' | 'in-flight'
  /** The verifier's scheme (`stripe`, `github`, …), when `verify` is a built-in verifier. */
  scheme?: string
  /** Which check refused it, for a refusal by a built-in verifier (`stale-timestamp`, …). */
  check?: string
}

/** One round of the outbox dispatcher. */
export interface DispatchEvent {
  type: 'dispatch'
  claimed: number
  delivered: number
  retried: number
  deadLettered: number
  /** Deliveries still running at the round's deadline (their rows stay leased). */
  overdue: number
  /** Milliseconds from the oldest claimed row's creation to its claim: the outbox's lag. */
  lagMs: number | undefined
  durationMs: number
}

/** A message (inbox) or an effect (outbox) given up on and kept as a dead letter. */
export interface DeadLetterEvent {
  type: 'dead-letter'
  source: 'inbox' | 'outbox'
  /** The consumer or the topic. */
  name: string
  key: string
  attempts: number
  error: string
}

/** A round trip of an engine to its store, by what it asked for. */
export type StoreOperation =
  /** Transactional: open the transaction, take the key's lock and read its record. */
  | 'begin'
  /** Transactional: write the record and commit. */
  | 'commit'
  /** Leased: claim the key (or find it completed or running). */
  | 'claim'
  /** Leased: renew the lease (the heartbeat). */
  | 'renew'
  /** Leased: save a step's result. */
  | 'step'
  /** Leased: store the outcome. */
  | 'complete'
  /** Leased: give the claim back after a failure. */
  | 'release'

/** One round trip of an engine to its store: the latency operators watch. */
export interface StoreEvent {
  type: 'store'
  store: string
  operation: StoreOperation
  durationMs: number
  /** False when the round trip failed (the store threw). */
  ok: boolean
}

/**
 * Something that happened to a lease (leased engine):
 * - `takeover`: this call claimed a key another call held without finishing: it resumed
 *   that call's saved steps (its lease ran out), or it found the key running and then
 *   claimed it (the holder's lease ran out, or the holder failed and gave the key back
 *   while this call waited). A holder that crashed before any duplicate arrived leaves
 *   nothing the engine can tell from a first call;
 * - `lost`: this call ended without storing its outcome because its lease was lost or
 *   could no longer be confirmed;
 * - `fenced`: the store refused a write under this call's token (a renewal, a step or
 *   the outcome): another call holds the key now.
 */
export interface LeaseEvent {
  type: 'lease'
  change: 'takeover' | 'lost' | 'fenced'
  store: string
  scope: string
}

/** One run of `reconcile`: how many rows of a table that should be unique are duplicates. */
export interface ReconcileEvent {
  type: 'reconcile'
  table: string
  columns: readonly string[]
  totalRows: number
  duplicateRows: number
  /** `duplicateRows / totalRows` (0 for an empty table). */
  duplicateRate: number
  threshold: number
  exceeded: boolean
}

/** Something worth an operator's attention that is not an error of the call at hand. */
export interface WarningEvent {
  type: 'warning'
  code: string
  message: string
  /** Who says so (`createInbox`, `createDispatcher`, `idempotency`, …). */
  source: string
  cause?: unknown
}

/**
 * Everything idem reports, told apart by `type`: `call`, `http`, `inbox`, `webhook`, `dispatch`,
 * `dead-letter`, `warning`, `store` (a round trip), `lease` (takeovers, lost leases,
 * fenced writes), `reconcile`.
 */
export type IdemEvent =
  | CallEvent
  | HttpEvent
  | InboxEvent
  | WebhookReceiverEvent
  | DispatchEvent
  | DeadLetterEvent
  | WarningEvent
  | StoreEvent
  | LeaseEvent
  | ReconcileEvent

/** A subscriber to an `EventStream`; what it throws is ignored. */
export type IdemEventListener = (event: IdemEvent) => void

/**
 * Where engines, front ends and the queue report what happened; metrics, logs and traces
 * subscribe.
 */
export interface EventStream {
  /** True when anyone listens: reporters skip building events nobody reads. */
  readonly listening: boolean
  /** Hands `event` to every listener. A listener that throws is ignored: reporting never changes an outcome. */
  emit(event: IdemEvent): void
  /** Adds a listener. @returns the function that removes it */
  subscribe(listener: IdemEventListener): () => void
}

/**
 * A stream of its own, for a test or a part of an app whose events must stay apart;
 * pass it as `events` to the front ends.
 * @example
 * const events = createEventStream()
 * events.subscribe((event) => { if (event.type === 'call') console.log(event.kind) })
 * const idem = createIdem({ store, events })
 */
export function createEventStream(): EventStream {
  const listeners = new Set<IdemEventListener>()
  return {
    get listening() {
      return listeners.size > 0
    },
    emit(event) {
      for (const listener of listeners) {
        try {
          listener(event)
        } catch {
          // ignored on purpose, see emit's contract
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
  }
}

/**
 * The process-wide stream every front end reports to unless given another as `events`:
 * subscribe once (a metrics exporter, a logger) and hear everything.
 * @example
 * import { idemEvents } from 'idem'
 * idemEvents.subscribe((event) => { if (event.type === 'warning') logger.warn(event.message) })
 */
export const idemEvents: EventStream = createEventStream()

/** What a warning does when nobody listens: goes to the console, so it is never lost. */
export function warn(events: EventStream, event: Omit<WarningEvent, 'type'>): void {
  if (events.listening) events.emit({ type: 'warning', ...event })
  else console.warn(event.message)
}

/**
 * Times one round trip of an engine to its store and reports it (`{ type: 'store' }`);
 * when nobody listens it only makes the call.
 * @example const session = await timedRoundTrip(events, store.name, 'begin', () => store.begin(request))
 */
export function timedRoundTrip<T>(events: EventStream, store: string, operation: StoreOperation, call: () => Promise<T>): Promise<T> {
  if (!events.listening) return call()
  const started = performance.now()
  const report = (ok: boolean): void => {
    if (events.listening) events.emit({ type: 'store', store, operation, durationMs: performance.now() - started, ok })
  }
  return call().then(
    (value) => {
      report(true)
      return value
    },
    (error: unknown) => {
      report(false)
      throw error
    },
  )
}
