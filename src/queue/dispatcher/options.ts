import { backoffDelay } from '../../core/backoff.js'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { idemEvents, warn, type EventStream } from '../../core/events.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, optionNames } from '../../core/errors/option-checks.js'
import { outboxTableOf } from '../outbox.js'
import { errorText } from '../payload.js'
import { CALLER, type DispatchContext, type DispatchTable } from './context.js'
import type { DispatcherOptions } from './types.js'

const OPTIONS = optionNames<DispatcherOptions>({
  store: true, deliver: true, batchSize: true, maxAttempts: true, backoff: true, leaseMs: true, pollMs: true, topics: true, events: true, onError: true,
})

/**
 * Checks `createDispatcher`'s options, fills in their defaults and derives the timings:
 * the dispatcher's context.
 * @throws InvalidOptionError naming the option
 */
export function dispatchContext(options: DispatcherOptions): DispatchContext {
  assertKnownOptions(CALLER, options, OPTIONS)
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
  const table: DispatchTable = outboxTableOf(store, CALLER)
  if (typeof deliver !== 'function') throw new InvalidOptionError(`${CALLER}: option "deliver" must be a function (row, { signal }) => Promise<void>`)
  assertCount(`${CALLER}: option "batchSize"`, batchSize, 1, 10_000)
  assertCount(`${CALLER}: option "maxAttempts"`, maxAttempts, 1, 1_000)
  assertDuration(`${CALLER}: option "leaseMs"`, leaseMs, 100)
  assertDuration(`${CALLER}: option "pollMs"`, pollMs, 1)
  if (topics !== undefined) {
    if (!Array.isArray(topics) || topics.length === 0) throw new InvalidOptionError(`${CALLER}: option "topics" must be a non-empty array of topic names`)
    topics.forEach((t, i) => assertName(`${CALLER}: option "topics[${i}]"`, t))
  }
  if (onError !== undefined && typeof onError !== 'function') throw new InvalidOptionError(`${CALLER}: option "onError" must be a function`)
  if (topics !== undefined && !table.filtersTopics) throw new InvalidOptionError(`${CALLER}: option "topics" is not supported by the ${store.name} store`)
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError(`${CALLER}: option "events" must be an event stream (createEventStream())`)
  }
  const delayOf = backoffDelay(backoff, CALLER)

  // The margin leaves the deliverer time to wind down, and the renewal time to land,
  // before the lease ends.
  const deadlineMs = leaseMs - Math.min(5_000, leaseMs / 5)
  return {
    table,
    deliver,
    batchSize,
    maxAttempts,
    delayOf,
    leaseMs,
    deadlineMs,
    deadlineMessage: `The delivery passed its deadline, ${Math.round(deadlineMs)} ms after the claim (the lease is ${leaseMs} ms)`,
    // Three renewals per lease: one that fails still leaves time for the next.
    renewEveryMs: Math.max(1, Math.floor(leaseMs / 3)),
    pollMs,
    topics: topics ?? null,
    events,
    onError,
    report: backgroundReport(events, onError),
  }
}

// Background work nobody awaits (a failed renewal, a late outcome that could not be
// written) would otherwise vanish; the round's own errors reach the caller instead.
function backgroundReport(events: EventStream, onError: ((error: unknown) => void) | undefined): (error: unknown) => void {
  return (error) => {
    if (onError === undefined) {
      warn(events, { code: 'dispatcher-background-error', source: CALLER, message: `idem ${CALLER}: ${errorText(error)}`, cause: error })
      return
    }
    try {
      onError(error)
    } catch {
      // A logging hook must not break the dispatcher.
    }
  }
}
