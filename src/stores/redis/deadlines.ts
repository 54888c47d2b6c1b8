/** One command being watched: when it expires, what to do then, and its neighbours in the queue. */
export interface Watched {
  readonly at: number
  readonly expire: () => void
  settled: boolean
  previous: Watched | undefined
  next: Watched | undefined
}

/**
 * The deadlines of a store's commands in flight, kept by one timer for the whole store
 * rather than one per command. Every command gets the same `timeoutMs`, so commands
 * expire in the order they were sent, and the timer only ever waits for the oldest one
 * still running: under a steady load it is armed about once per `timeoutMs`, however
 * many commands go by. A settled command leaves the queue at once (nothing of it stays
 * for the garbage collector to carry), and the timer keeps the process alive only while
 * a command runs, as a timer per command did.
 */
export class CommandDeadlines {
  readonly #timeoutMs: number
  // Oldest first.
  #first: Watched | undefined
  #last: Watched | undefined
  #timer: NodeJS.Timeout | undefined

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs
  }

  /** Watches a command sent now: `expire` runs if it has not settled `timeoutMs` from now. */
  watch(expire: () => void): Watched {
    const watched: Watched = { at: performance.now() + this.#timeoutMs, expire, settled: false, previous: this.#last, next: undefined }
    if (this.#last === undefined) {
      this.#first = watched
      if (this.#timer === undefined) this.#arm(this.#timeoutMs)
      else this.#timer.ref()
    } else {
      this.#last.next = watched
    }
    this.#last = watched
    return watched
  }

  /**
   * Marks a command settled, before its deadline or after it.
   * @returns false when its deadline had passed already (`expire` ran)
   */
  settle(watched: Watched): boolean {
    if (watched.settled) return false
    watched.settled = true
    this.#remove(watched)
    if (this.#first === undefined) this.#timer?.unref()
    return true
  }

  #remove(watched: Watched): void {
    const { previous, next } = watched
    if (previous === undefined) this.#first = next
    else previous.next = next
    if (next === undefined) this.#last = previous
    else next.previous = previous
    watched.previous = undefined
    watched.next = undefined
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#tick(), ms)
  }

  #tick(): void {
    this.#timer = undefined
    const now = performance.now()
    for (let watched = this.#first; watched !== undefined && watched.at <= now; watched = this.#first) {
      watched.settled = true
      this.#remove(watched)
      watched.expire()
    }
    if (this.#first !== undefined) this.#arm(this.#first.at - now)
  }
}
