import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { inboxStoreUnavailableLine, reportDeadLetter, type InboxEvent } from '../events.js'
import type { InboxContext } from './context.js'
import type { ConsumeResult } from './types.js'

/** Reports a settled message to the inbox's event stream, if anyone listens, and a dead letter always (it is also logged); returns `result`. */
export function report<Tx, Body, R extends ConsumeResult<unknown>>({ events, consumer }: InboxContext<Tx, Body>, result: R, started: number, error?: unknown): R {
  if (events.listening) {
    const event: InboxEvent = { type: 'inbox', consumer, status: result.status, durationMs: performance.now() - started }
    if ('attempts' in result) event.attempts = result.attempts
    if (error !== undefined) event.error = error
    events.emit(event)
  }
  if (result.status === 'dead-lettered') {
    reportDeadLetter(events, { type: 'dead-letter', source: 'inbox', name: consumer, key: result.key, attempts: result.attempts, error: result.error })
  }
  return result
}

/**
 * Reports a message the store failed on: nothing was counted, and the error goes to the
 * caller. A store that could not be reached is also logged (a webhook answers it 503).
 */
export function reportError<Tx, Body>({ events, consumer }: InboxContext<Tx, Body>, started: number, error: unknown): void {
  if (!events.listening && !(error instanceof StoreUnavailableError)) return
  const event: InboxEvent = { type: 'inbox', consumer, status: 'error', durationMs: performance.now() - started, error }
  if (error instanceof StoreUnavailableError) events.fail(event, inboxStoreUnavailableLine(consumer, error))
  else events.emit(event)
}
