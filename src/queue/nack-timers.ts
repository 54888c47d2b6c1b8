/** Timers for delayed nacks; on close they fire at once, so nothing is left held. */
export class NackTimers {
  readonly #pending = new Map<NodeJS.Timeout, () => void>()
  /** Runs `action` after `ms`. */
  after(ms: number, action: () => void): void {
    const timer = setTimeout(() => {
      this.#pending.delete(timer)
      action()
    }, ms)
    this.#pending.set(timer, action)
  }
  /** Fires every pending action now. */
  flush(): void {
    for (const [timer, action] of this.#pending) {
      clearTimeout(timer)
      this.#pending.delete(timer)
      try {
        action()
      } catch {
        // The connection may already be gone: the broker redelivers unsettled messages anyway.
      }
    }
  }
}
