import type { EventStream } from '../../core/events.js'
import type { InboxSession, InboxTable } from '../../ports/inbox-table.js'
import type { InboxMessage, InboxWarning } from './types.js'

/** The name the inbox's option errors and warnings go by. */
export const CALLER = 'createInbox'

// An in-flight duplicate is redelivered this much later: the holder is most likely done by then.
export const IN_FLIGHT_RETRY_MS = 1_000

/**
 * What every part of one inbox shares: its options, checked and with their defaults
 * (`inboxContext`), made once, with the inbox.
 */
export interface InboxContext<Tx, Body> {
  readonly table: InboxTable<Tx>
  readonly consumer: string
  readonly retentionMs: number
  readonly redeliveryHorizonMs: number | undefined
  readonly idOf: ((message: InboxMessage<Body>) => string) | undefined
  readonly maxAttempts: number
  /** `maxDeliveries`, or its default (4 × maxAttempts). */
  readonly maxDeliveries: number
  readonly waitMs: number
  readonly deadlineMs: number
  readonly events: EventStream
  readonly onWarning: ((warning: InboxWarning) => void) | undefined
}

/** Runs the inbox's own statements in a session: on failure it is rolled back, and a lost connection is the error. */
export async function inSession<Tx, T>(session: InboxSession<Tx>, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    await session.rollback()
    throw session.lost?.() ?? error
  }
}
