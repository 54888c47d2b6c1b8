/**
 * The one event stream: every front end (the engines, the HTTP middleware, the inbox,
 * the outbox dispatcher) reports what happened to it here, so that a metrics exporter
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

/** What the HTTP middleware answered without running the route, or that it let a request through. */
export interface HttpEvent {
  type: 'http'
  outcome: 'missing-key' | 'invalid-key' | 'body-too-large' | 'unprotected'
  method: string
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
 * Everything idem reports, told apart by `type`: `call`, `http`, `inbox`, `dispatch`,
 * `dead-letter`, `warning`.
 */
export type IdemEvent = CallEvent | HttpEvent | InboxEvent | DispatchEvent | DeadLetterEvent | WarningEvent

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
