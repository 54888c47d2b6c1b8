/**
 * Bounded holds (DESIGN "Bounded holds"): a call that holds a key (a transaction and its
 * lock, or a renewed lease) has a deadline, and past it idem lets the hold go, so a
 * function that never settles (a route that never answers, a handler stuck on a dead
 * socket) cannot keep its key, and its database connection, until the process restarts.
 */
import { holdClock, type HoldClock, type Ticking } from './hold-clock.js'

/**
 * 5 minutes: how long a direct engine call or an inbox handler may hold its key by
 * default. Long enough for any work that belongs in one call (a slow batch of writes, an
 * LLM step), short enough that a call that never settles frees its key within minutes
 * rather than at the next restart. The HTTP middleware has a shorter default of its own.
 */
export const DEFAULT_DEADLINE_MS = 5 * 60 * 1000

/**
 * Waits for `work`, a held call's function, for up to `deadlineMs`, and settles as it
 * does if it settles in time. When the deadline passes first, `expire` decides: it lets
 * the hold go and returns the promise of the error the call fails with (this rejects
 * with it, and ignores what `work` does afterwards), or, where the hold cannot be let go
 * while `work` runs, returns nothing, and this goes on waiting for `work`.
 *
 * The deadline is watched by the shared clock of held calls (`hold-clock.ts`), which
 * meets it within an eighth of `deadlineMs` (at most 128 ms late): a call that ends
 * before the clock's next tick arms no timer of its own.
 * @example
 * const value = await withinDeadline(fn(tx), 30_000, () => session.abandon?.().then(() => new OverranError('…')))
 */
export function withinDeadline<T>(work: PromiseLike<T>, deadlineMs: number, expire: () => Promise<Error> | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const clock = holdClock(deadlineMs / 8)
    const watch = new DeadlineWatch(clock, performance.now() + deadlineMs, expire, reject)
    clock.hold(watch)
    work.then(
      (value) => {
        if (watch.expired) return
        clock.release(watch)
        resolve(value)
      },
      (error: unknown) => {
        if (watch.expired) return
        clock.release(watch)
        reject(error)
      },
    )
  })
}

/** One call's deadline on the clock: at `at`, `expire` runs once and the watch leaves the clock. */
class DeadlineWatch implements Ticking {
  /** True once `expire` let the hold go: from then on the call's outcome is the deadline's, whatever `work` does. */
  expired = false
  readonly #clock: HoldClock
  readonly #at: number
  readonly #expire: () => Promise<Error> | undefined
  readonly #reject: (error: unknown) => void

  constructor(clock: HoldClock, at: number, expire: () => Promise<Error> | undefined, reject: (error: unknown) => void) {
    this.#clock = clock
    this.#at = at
    this.#expire = expire
    this.#reject = reject
  }

  tick(now: number): void {
    if (now < this.#at) return
    this.#clock.release(this)
    const letGo = this.#expire()
    if (letGo === undefined) return
    this.expired = true
    letGo.then(this.#reject, this.#reject)
  }
}

/**
 * True for a promise (anything with a `then`): a function that returned one is still
 * running, and only then is there a deadline to watch.
 * @example if (isThenable(returned)) value = await withinDeadline(returned, deadlineMs, expire)
 */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function'
}
