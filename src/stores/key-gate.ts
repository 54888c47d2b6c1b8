/**
 * In-process coordination for stores without a lock manager of their own (SQLite's
 * one connection, the memory store): at most one session per key, and waiters that
 * give up after a deadline instead of queueing for ever.
 */
export class KeyGate {
  readonly #holders = new Map<string, Promise<void>>()

  /**
   * Waits until no session holds `id`, for at most `waitMs`, then takes it.
   * @returns a release function, or `undefined` when the wait timed out
   */
  async enter(id: string, waitMs: number): Promise<(() => void) | undefined> {
    const deadline = Date.now() + Math.max(0, waitMs)
    for (;;) {
      const held = this.#holders.get(id)
      if (held === undefined) break
      const left = deadline - Date.now()
      if (left <= 0) return undefined
      if (!(await settlesWithin(held, left))) return undefined
    }
    let release!: () => void
    this.#holders.set(id, new Promise<void>((resolve) => (release = resolve)))
    return () => {
      this.#holders.delete(id)
      release()
    }
  }
}

/** A FIFO mutex whose waiters give up after a deadline. */
export class Mutex {
  #busy = false
  readonly #waiters: Array<() => void> = []

  /** @returns a release function (call it once), or `undefined` when `timeoutMs` passed first */
  acquire(timeoutMs: number): Promise<(() => void) | undefined> {
    if (!this.#busy) {
      this.#busy = true
      return Promise.resolve(this.#releaser())
    }
    return new Promise((resolve) => {
      const grant = (): void => {
        clearTimeout(timer)
        resolve(this.#releaser())
      }
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(grant), 1)
        resolve(undefined)
      }, Math.max(0, timeoutMs))
      this.#waiters.push(grant)
    })
  }

  #releaser(): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.#waiters.shift()
      if (next === undefined) this.#busy = false
      else next()
    }
  }
}

async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)))
  try {
    return await Promise.race([promise.then(() => true as const), timeout])
  } finally {
    clearTimeout(timer)
  }
}
