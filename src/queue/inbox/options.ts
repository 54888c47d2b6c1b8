import { DEFAULT_WAIT_MS } from '../../core/engine.js'
import { DEFAULT_DEADLINE_MS } from '../../core/engine-options.js'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { idemEvents } from '../../core/events.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, optionNames } from '../../core/errors/option-checks.js'
import type { InboxTable, WithInboxTable } from '../../ports/inbox-table.js'
import { CALLER, type InboxContext } from './context.js'
import { DEFAULT_INBOX_RETENTION_MS, DEFAULT_MAX_ATTEMPTS, type ConsumeOptions, type InboxOptions } from './types.js'

const OPTIONS = optionNames<InboxOptions<unknown>>({
  store: true, consumer: true, retentionMs: true, redeliveryHorizonMs: true, idOf: true, maxAttempts: true, maxDeliveries: true, waitMs: true, deadlineMs: true, events: true, onWarning: true,
})

const CONSUME_OPTIONS = optionNames<ConsumeOptions>({ deadlineMs: true, waitMs: true })

/**
 * Checks `createInbox`'s options and fills in their defaults: the inbox's context.
 * @throws InvalidOptionError naming the option (also for a store without an inbox table)
 */
export function inboxContext<Tx, Body>(options: InboxOptions<Tx, Body>): InboxContext<Tx, Body> {
  assertKnownOptions(CALLER, options, OPTIONS)
  const {
    store,
    consumer,
    retentionMs = DEFAULT_INBOX_RETENTION_MS,
    redeliveryHorizonMs,
    idOf,
    maxAttempts = DEFAULT_MAX_ATTEMPTS,
    maxDeliveries,
    waitMs = DEFAULT_WAIT_MS,
    deadlineMs = DEFAULT_DEADLINE_MS,
    events = idemEvents,
    onWarning,
  } = options
  const table = inboxTableOf(store)
  assertName(`${CALLER}: option "consumer"`, consumer)
  assertDuration(`${CALLER}: option "retentionMs"`, retentionMs, 1)
  if (redeliveryHorizonMs !== undefined) assertDuration(`${CALLER}: option "redeliveryHorizonMs"`, redeliveryHorizonMs, 0)
  if (idOf !== undefined && typeof idOf !== 'function') throw new InvalidOptionError(`${CALLER}: option "idOf" must be a function of the message`)
  assertCount(`${CALLER}: option "maxAttempts"`, maxAttempts, 1, 1_000)
  const deliveriesLimit = maxDeliveries ?? maxAttempts * 4
  assertCount(`${CALLER}: option "maxDeliveries"`, deliveriesLimit, maxAttempts, 100_000)
  assertDuration(`${CALLER}: option "waitMs"`, waitMs, 0)
  assertDuration(`${CALLER}: option "deadlineMs"`, deadlineMs, 1)
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError(`${CALLER}: option "events" must be an event stream (createEventStream())`)
  }
  if (onWarning !== undefined && typeof onWarning !== 'function') throw new InvalidOptionError(`${CALLER}: option "onWarning" must be a function`)
  return { table, consumer, retentionMs, redeliveryHorizonMs, idOf, maxAttempts, maxDeliveries: deliveriesLimit, waitMs, deadlineMs, events, onWarning }
}

/**
 * Checks one `consume` call's options (a call without them has nothing to check).
 * @throws InvalidOptionError naming the option
 */
export function assertConsumeOptions(options: ConsumeOptions): void {
  assertKnownOptions('consume', options, CONSUME_OPTIONS)
  if (options.deadlineMs !== undefined) assertDuration('consume: option "deadlineMs"', options.deadlineMs, 1)
  if (options.waitMs !== undefined) assertDuration('consume: option "waitMs"', options.waitMs, 0)
}

function inboxTableOf<Tx>(store: WithInboxTable<Tx> | undefined): InboxTable<Tx> {
  if (store === null || typeof store !== 'object') {
    throw new InvalidOptionError(`${CALLER}: pass "store", a store with an inbox table: postgresStore(...), sqliteStore(...) or memoryStore()`)
  }
  const table = (store as Partial<WithInboxTable<Tx>>).inbox
  if (table === null || typeof table !== 'object' || typeof table.begin !== 'function' || typeof table.recordFailure !== 'function') {
    const name = typeof store.name === 'string' ? ` ("${store.name}")` : ''
    throw new InvalidOptionError(
      `${CALLER}: option "store"${name} has no inbox table, so it is not from postgresStore, sqliteStore or memoryStore: ` +
        'the inbox needs a postgres, sqlite or memory store, which keeps message ids with the handler\'s effects',
    )
  }
  return table
}
