import type { DispatchContext } from './context.js'
import type { OverdueDeliveries } from './overdue.js'
import { runRound } from './round.js'
import type { DispatchResult } from './types.js'

/** Runs rounds (`runOnce`, `drain`) and knows which are under way, so that `stop()` can wait for them. */
export class Rounds {
  readonly #context: DispatchContext
  readonly #overdue: OverdueDeliveries
  /** Rounds under way, manual `runOnce` calls included: `stop()` waits for these too. */
  readonly #underway = new Set<Promise<DispatchResult>>()

  constructor(context: DispatchContext, overdue: OverdueDeliveries) {
    this.#context = context
    this.#overdue = overdue
  }

  /** The rounds under way. */
  get underway(): ReadonlySet<Promise<DispatchResult>> {
    return this.#underway
  }

  /** One round (see `runRound`), known as under way until it ends. */
  runOnce(): Promise<DispatchResult> {
    const round = runRound(this.#context, this.#overdue)
    this.#underway.add(round)
    const forget = () => void this.#underway.delete(round)
    round.then(forget, forget)
    return round
  }

  /** Rounds until one claims nothing; resolves with their totals. */
  async drain(): Promise<DispatchResult> {
    const total: DispatchResult = { claimed: 0, delivered: 0, retried: 0, deadLettered: 0, overdue: 0 }
    for (;;) {
      const round = await this.runOnce()
      total.claimed += round.claimed
      total.delivered += round.delivered
      total.retried += round.retried
      total.deadLettered += round.deadLettered
      total.overdue += round.overdue
      if (round.claimed === 0) return total
    }
  }
}
