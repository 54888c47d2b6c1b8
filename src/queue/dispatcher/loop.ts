import type { DispatchContext } from './context.js'
import type { OverdueDeliveries } from './overdue.js'
import type { Rounds } from './rounds.js'

/**
 * `start` and `stop`: rounds in the background, back to back while a round fills its
 * batch, else every `pollMs`; stopping ends the loop after its current round and waits
 * for every round and overdue delivery to be recorded.
 */
export class DispatchLoop {
  readonly #context: DispatchContext
  readonly #rounds: Rounds
  readonly #overdue: OverdueDeliveries
  #running: Promise<void> | undefined
  #stopping = false
  #wake: (() => void) | undefined

  constructor(context: DispatchContext, rounds: Rounds, overdue: OverdueDeliveries) {
    this.#context = context
    this.#rounds = rounds
    this.#overdue = overdue
  }

  /** Starts the loop, unless it runs already. */
  start(): void {
    if (this.#running !== undefined) return
    this.#stopping = false
    this.#running = this.#loop()
  }

  /** Ends the loop after its current round; resolves once every round and overdue delivery is recorded. */
  async stop(): Promise<void> {
    this.#stopping = true
    this.#wake?.()
    await this.#running
    this.#running = undefined
    // Returning earlier would let the caller exit mid-send: the outcome would be lost and the row sent again.
    const rounds = this.#rounds.underway
    const overdue = this.#overdue.recordings
    while (rounds.size > 0 || overdue.size > 0) await Promise.allSettled([...rounds, ...overdue])
  }

  async #loop(): Promise<void> {
    const { batchSize, pollMs, onError } = this.#context
    while (!this.#stopping) {
      let claimed = 0
      try {
        claimed = (await this.#rounds.runOnce()).claimed
      } catch (error) {
        try {
          onError?.(error)
        } catch {
          // A logging hook must not stop dispatching.
        }
      }
      if (claimed < batchSize && !this.#stopping) {
        // Idle for pollMs, or until stop() wakes it.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pollMs)
          this.#wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        this.#wake = undefined
      }
    }
  }
}
