import type { EventStream } from '../../core/events.js'
import type { OutboxTable } from '../../ports/outbox-table.js'
import type { Deliverer } from './types.js'

/** The name the dispatcher's option errors and warnings go by. */
export const CALLER = 'createDispatcher'

/** The outbox table as the dispatcher uses it: any store's (it never adds, so neither the transaction nor `add`'s result matters). */
export type DispatchTable = OutboxTable<unknown, boolean | Promise<boolean>>

/**
 * What every part of one dispatcher shares: its options, checked and with their
 * defaults, and the timings derived from them (`dispatchContext`), made once, with the
 * dispatcher.
 */
export interface DispatchContext {
  readonly table: DispatchTable
  readonly deliver: Deliverer
  readonly batchSize: number
  readonly maxAttempts: number
  /** The delay before retry `attempt`, from the `backoff` option. */
  readonly delayOf: (attempt: number) => number
  readonly leaseMs: number
  /** How long each delivery has, from the claim: `leaseMs` less a margin. */
  readonly deadlineMs: number
  /** The message of the `TimeoutError` a delivery's signal fires with at `deadlineMs`. */
  readonly deadlineMessage: string
  /** How often the lease of rows whose deliveries still run is renewed. */
  readonly renewEveryMs: number
  readonly pollMs: number
  /** The topics claimed, or `null` for all. */
  readonly topics: readonly string[] | null
  readonly events: EventStream
  readonly onError: ((error: unknown) => void) | undefined
  /**
   * Reports an error of background work nobody awaits (a failed renewal, a late outcome
   * that could not be written): to `onError`, else to the event stream as a warning.
   */
  readonly report: (error: unknown) => void
}
