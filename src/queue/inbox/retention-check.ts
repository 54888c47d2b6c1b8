import { warn } from '../../core/events.js'
import { assertDuration } from '../../core/errors/option-checks.js'
import { CALLER, type InboxContext } from './context.js'
import type { InboxWarning } from './types.js'

/**
 * Compares the inbox's `retentionMs` with how long the broker may redeliver a message,
 * and warns once if a redelivery could come after the message's id is forgotten.
 */
export class RetentionCheck<Tx, Body> {
  readonly #context: InboxContext<Tx, Body>
  #warned = false

  constructor(context: InboxContext<Tx, Body>) {
    this.#context = context
  }

  /** The broker may redeliver for `horizonMs`: warns (once) if that is longer than the retention. */
  expectRedeliveryWithin(horizonMs: number, source = 'the broker'): void {
    assertDuration('expectRedeliveryWithin: "horizonMs"', horizonMs, 0)
    const { consumer, retentionMs, onWarning, events } = this.#context
    if (this.#warned || horizonMs <= retentionMs) return
    this.#warned = true
    const warning: InboxWarning = {
      code: 'retention-shorter-than-redelivery-horizon',
      message:
        `idem inbox "${consumer}": retentionMs (${retentionMs} ms) is shorter than how long ${source} may redeliver a message ` +
        `(${horizonMs} ms); a message redelivered after its id is forgotten runs again. Raise retentionMs to at least ${horizonMs}.`,
    }
    try {
      if (onWarning !== undefined) onWarning(warning)
      else warn(events, { ...warning, source: CALLER })
    } catch {
      // A logging hook must not stop consumption.
    }
  }
}
