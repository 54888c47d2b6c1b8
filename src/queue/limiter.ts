/** Runs at most `limit` tasks at once; `run` resolves when a slot is free (back-pressure for pull loops). */
export class Limiter {
  readonly #limit: number
  readonly #running = new Set<Promise<void>>()
  constructor(limit: number) {
    this.#limit = limit
  }
  /** Waits for a free slot, then starts `task` without waiting for it. */
  async run(task: () => Promise<void>): Promise<void> {
    while (this.#running.size >= this.#limit) await Promise.race(this.#running)
    const running: Promise<void> = task()
      .catch(() => {})
      .finally(() => this.#running.delete(running))
    this.#running.add(running)
  }
  /** Resolves when every started task has finished. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running])
  }
}
