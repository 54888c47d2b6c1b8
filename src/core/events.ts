/**
 * The one event stream: the engines and every front end report what happened to them
 * here, so that a metrics exporter or a logger is one subscriber. Events describe
 * outcomes, never inputs: no bodies, no keys' payloads.
 *
 * The core defines the stream and the engines' own events (`call`, `store`, `lease`,
 * `warning`). Each front end declares its own events in its folder and adds them to
 * `IdemEventTypes`, so the core names none of them and `IdemEvent` stays one closed
 * union to switch on.
 */
import { allOf } from './all-of.js'
import { loggerOf, writeLine, type FailureLine, type IdemLogger } from './logger.js'

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

/** Every `OutcomeKind`, for what needs them at run time (a metric's label values). */
export const OUTCOME_KINDS = allOf<OutcomeKind>()(['fresh', 'replayed', 'not-stored', 'in-flight', 'mismatch', 'lease-lost', 'overran', 'error'])

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

/** Every `CallEvent.engine`. */
export const ENGINES = allOf<CallEvent['engine']>()(['transactional', 'leased'])

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

/** Every `StoreOperation`. */
export const STORE_OPERATIONS = allOf<StoreOperation>()(['begin', 'commit', 'claim', 'renew', 'step', 'complete', 'release'])

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
 * Every kind of event idem reports, by its `type`: each key is the `type` of the event
 * it names. The core's own are here; each front end adds its events by declaration
 * merging, in an `events.ts` of its folder (`declare module` of this file).
 */
export interface IdemEventTypes {
  /** An engine call: `CallEvent`. */
  call: CallEvent
  /** A round trip of an engine to its store: `StoreEvent`. */
  store: StoreEvent
  /** A lease taken over, lost or fenced: `LeaseEvent`. */
  lease: LeaseEvent
  /** Something worth an operator's attention: `WarningEvent`. */
  warning: WarningEvent
}

/**
 * Everything idem reports, told apart by `type` (the keys of `IdemEventTypes`): a closed
 * union, so a `switch (event.type)` narrows each case to its event.
 */
export type IdemEvent = IdemEventTypes[keyof IdemEventTypes]

/** A subscriber to an `EventStream`; what it throws is ignored. */
export type IdemEventListener = (event: IdemEvent) => void

/**
 * Where engines and front ends report what happened; metrics, logs and traces
 * subscribe. Failures an operator must hear of (a store that is down, a dead letter,
 * a lost lease, a refused webhook) also go to the stream's logger, one line each.
 */
export interface EventStream {
  /** True when anyone listens: reporters skip building events nobody reads. */
  readonly listening: boolean
  /** Hands `event` to every listener. A listener that throws is ignored: reporting never changes an outcome. */
  emit(event: IdemEvent): void
  /** Adds a listener. @returns the function that removes it */
  subscribe(listener: IdemEventListener): () => void
  /**
   * Reports a failure: `event` to the listeners (when any) and `line` to the logger
   * (unless silenced). Called only where something failed, never on a request's way through.
   */
  fail(event: IdemEvent, line: FailureLine): void
  /**
   * Where failure lines go from now on: a logger with `warn` and `error` (pino's, or
   * `console`), or `false` for none. The default is one JSON line each on stderr.
   * @throws InvalidOptionError when `logger` is neither
   */
  setLogger(logger: IdemLogger | false): void
}

/** What `createEventStream` takes. */
export interface EventStreamOptions {
  /**
   * Where failure lines go: a logger with `warn(fields, message)` and
   * `error(fields, message)` (pino's, or `console`), or `false` for none.
   * @default one JSON line each on stderr (`jsonConsoleLogger`)
   */
  logger?: IdemLogger | false
}

/**
 * A stream of its own, for a test or a part of an app whose events must stay apart;
 * pass it as `events` to the front ends.
 * @throws InvalidOptionError when `logger` is neither false nor a logger
 * @example
 * const events = createEventStream({ logger: pino() }) // failure lines to pino; `false` for none
 * events.subscribe((event) => { if (event.type === 'call') console.log(event.kind) })
 * const idem = createIdem({ store, events })
 */
export function createEventStream(options: EventStreamOptions = {}): EventStream {
  return new ListenedStream(loggerOf('createEventStream', options.logger))
}

/**
 * The stream `createEventStream` makes. `listening` is a plain field, kept up to date by
 * `subscribe` and its undo: every call of every engine and front end reads it, so reading
 * it runs no code.
 */
class ListenedStream implements EventStream {
  listening = false
  readonly #listeners = new Set<IdemEventListener>()
  #logger: IdemLogger | undefined

  constructor(logger: IdemLogger | undefined) {
    this.#logger = logger
  }

  // Arrows, as the stream's methods were closures before: they work taken off it.
  readonly emit = (event: IdemEvent): void => {
    for (const listener of this.#listeners) {
      try {
        listener(event)
      } catch {
        // ignored on purpose, see emit's contract
      }
    }
  }

  readonly fail = (event: IdemEvent, line: FailureLine): void => {
    if (this.listening) this.emit(event)
    if (this.#logger !== undefined) writeLine(this.#logger, event.type, line)
  }

  readonly setLogger = (logger: IdemLogger | false): void => {
    this.#logger = loggerOf('setLogger', logger)
  }

  readonly subscribe = (listener: IdemEventListener): (() => void) => {
    this.#listeners.add(listener)
    this.listening = true
    return () => {
      this.#listeners.delete(listener)
      this.listening = this.#listeners.size > 0
    }
  }
}

/**
 * The process-wide stream every front end reports to unless given another as `events`:
 * subscribe once (a metrics exporter, a logger) and hear everything. Its failure lines
 * go to stderr as JSON until `idemEvents.setLogger(pino())` (or `false`) says otherwise.
 * @example
 * import { idemEvents } from 'idem'
 * idemEvents.setLogger(logger) // pino's, or console; false silences
 * idemEvents.subscribe((event) => { if (event.type === 'warning') logger.warn(event.message) })
 */
export const idemEvents: EventStream = createEventStream()

/**
 * idem's one logger hook: every warning of the library (engines, front ends, stores,
 * broker adapters) is reported here, as a `warning` event on `events`; when nobody
 * listens it goes to the console, so it is never lost. No other part of the library
 * writes to the console (the CLI's own output aside).
 * @example warn(idemEvents, { code: 'shared-scope', source: 'idempotency', message: 'idem: …' })
 */
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
