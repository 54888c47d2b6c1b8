/**
 * What the queue front end reports to the event stream (`idemEvents`): `inbox` (one
 * message settled), `dispatch` (one round of the outbox dispatcher) and `dead-letter`
 * (a message or an effect given up on). Added to the core's `IdemEventTypes`, so
 * `IdemEvent` holds them.
 */
import { allOf } from '../core/all-of.js'
import type { EventStream } from '../core/events.js'
import { errorText, type FailureLine } from '../core/logger.js'

declare module '../core/events.js' {
  interface IdemEventTypes {
    /** A message settled by the inbox: `InboxEvent`. */
    inbox: InboxEvent
    /** A round of the outbox dispatcher: `DispatchEvent`. */
    dispatch: DispatchEvent
    /** A message or an effect kept as a dead letter: `DeadLetterEvent`. */
    'dead-letter': DeadLetterEvent
  }
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

/** Every `InboxEvent.status`. */
export const INBOX_STATUSES = allOf<InboxEvent['status']>()(['processed', 'duplicate', 'failed', 'dead-lettered', 'in-flight', 'error'])

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

/** What became of the deliveries of a dispatch round, each counted by `DispatchEvent` (`delivered`, `retried`, `deadLettered`, `overdue`). */
export type DispatchOutcome = 'delivered' | 'retried' | 'dead-lettered' | 'overdue'

/** Every `DispatchOutcome`. */
export const DISPATCH_OUTCOMES = allOf<DispatchOutcome>()(['delivered', 'retried', 'dead-lettered', 'overdue'])

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

/** Every `DeadLetterEvent.source`. */
export const DEAD_LETTER_SOURCES = allOf<DeadLetterEvent['source']>()(['inbox', 'outbox'])

/**
 * Reports a dead letter: the event to the stream's listeners, and one line to its logger
 * (the consumer or topic, the message's key and the last error; never the message).
 */
export function reportDeadLetter(events: EventStream, event: DeadLetterEvent): void {
  events.fail(event, {
    level: 'error',
    code: 'dead-lettered',
    message: `idem: ${event.source === 'inbox' ? 'the inbox' : 'the outbox'} gave up on ${event.key} (${event.name}) after ${event.attempts} attempts: ${event.error}`,
    fields: { source: event.source, name: event.name, key: event.key, attempts: event.attempts, error: event.error },
  })
}

/** The line an inbox writes when its store could not be reached: the message was not recorded, and its redelivery is safe. */
export function inboxStoreUnavailableLine(consumer: string, error: unknown): FailureLine {
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error
  return {
    level: 'error',
    code: 'store-unavailable',
    message: `idem: the inbox ${consumer} could not reach its store; the message was not recorded and is safe to deliver again`,
    fields: { consumer, error: errorText(cause) },
  }
}
