import type { ClaimHold } from './claim-hold.js'
import type { Deliverer, OutboxRow } from './types.js'

/** How a delivery settled. */
export type Outcome = { readonly failed: false } | { readonly failed: true; readonly error: unknown }

const DELIVERED: Outcome = { failed: false }

/**
 * One delivery of one claimed row: started when it is made, with the signal of its own
 * controller, and held by `hold` (its lease renewed) until it settles.
 */
export class Attempt {
  readonly controller = new AbortController()
  /** Resolves (never rejects) once the delivery has settled and `outcome` is set. */
  readonly settled: Promise<Outcome>
  /** How the delivery settled; `undefined` while it runs. */
  outcome: Outcome | undefined

  constructor(
    readonly row: OutboxRow,
    hold: ClaimHold,
    deliver: Deliverer,
  ) {
    hold.add(row.id, this.controller)
    this.settled = this.#deliver(deliver).then(
      () => this.#settle(DELIVERED, hold),
      (error: unknown) => this.#settle({ failed: true, error }, hold),
    )
  }

  // Async so that a deliverer that throws synchronously fails its attempt, not the round.
  async #deliver(deliver: Deliverer): Promise<void> {
    return deliver(this.row, { signal: this.controller.signal })
  }

  #settle(outcome: Outcome, hold: ClaimHold): Outcome {
    this.outcome = outcome
    hold.release(this.row.id)
    return outcome
  }
}
