import type { Attempt } from './attempt.js'
import type { DispatchContext } from './context.js'
import { Outcomes } from './outcomes.js'

/**
 * Deliveries still running when their round ended (their signal has fired): their rows
 * stay leased (`ClaimHold`), and each outcome is recorded under its claim once the
 * delivery settles. `stop()` waits for these recordings.
 */
export class OverdueDeliveries {
  readonly #context: DispatchContext
  /** Recording of overdue deliveries' outcomes, once they settle. */
  readonly #recordings = new Set<Promise<void>>()

  constructor(context: DispatchContext) {
    this.#context = context
  }

  /** The recordings still to finish. */
  get recordings(): ReadonlySet<Promise<void>> {
    return this.#recordings
  }

  /** Records `attempt`'s outcome under `claimId` once it settles; a failure to write it is reported. */
  recordLater(claimId: string, attempt: Attempt): void {
    const recorded = attempt.settled
      .then((outcome) => {
        const outcomes = new Outcomes(this.#context)
        outcomes.add(attempt.row, outcome)
        return outcomes.write(claimId)
      })
      .catch(this.#context.report)
      .finally(() => this.#recordings.delete(recorded))
    this.#recordings.add(recorded)
  }
}
