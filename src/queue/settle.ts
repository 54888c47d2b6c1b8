/**
 * Small shared pieces for adapters: a concurrency limit, delayed actions that can be
 * flushed on close, and header conversion.
 */

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

/** Timers for delayed nacks; on close they fire at once, so nothing is left held. */
export class Timers {
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

/** Header values as text (AMQP headers may be numbers, buffers, nested tables). */
export function textHeaders(headers: Record<string, unknown> | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  if (headers === undefined || headers === null) return out
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || value === null) continue
    out[name] = typeof value === 'string' ? value : value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : JSON.stringify(value)
  }
  return out
}
