/**
 * Bounded holds (DESIGN "Bounded holds"): a call that holds a key (a transaction and its
 * lock, or a renewed lease) has a deadline, and past it idem lets the hold go, so a
 * function that never settles (a route that never answers, a handler stuck on a dead
 * socket) cannot keep its key, and its database connection, until the process restarts.
 *
 * The clock of held calls watches them: one timer for every call that holds a key,
 * rather than one per call. A held call registers itself (one `Set.add`) and leaves at
 * its end; while anything is registered the clock ticks, and each tick asks every
 * registered call what is due (a renewal, the end of a confirmed lease, a deadline).
 * Most calls end before the first tick: they arm no timer of their own, and do nothing
 * on any tick. The deadlines of the transactional engine and of the inbox
 * (`withinDeadline`) and the leased engine's heartbeats (`Heartbeat`) share it.
 */

/** Something held that looks at the time on each tick of its clock. */
export interface Ticking {
  /** Called on every tick while registered, with `performance.now()` of the tick. */
  tick(now: number): void
}

/** The coarsest tick: what a call's deadline, renewal or lapse may be late by, at most. */
export const MAX_TICK_MS = 128

/**
 * A clock that ticks every `periodMs` while anything is registered: one interval,
 * `unref`'d (the held work keeps a process alive, not its clock), started by the first
 * registration and stopped by the first tick that finds nothing registered, so an idle
 * process has no timer and a busy one has this one.
 */
export class HoldClock {
  readonly periodMs: number
  readonly #held = new Set<Ticking>()
  #timer: ReturnType<typeof setInterval> | undefined

  constructor(periodMs: number) {
    this.periodMs = periodMs
  }

  /** How many calls are registered now. */
  get size(): number {
    return this.#held.size
  }

  /** Whether the clock's timer runs. */
  get running(): boolean {
    return this.#timer !== undefined
  }

  /** Registers `held`: its `tick` runs on every tick until `release`. */
  hold(held: Ticking): void {
    this.#held.add(held)
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#tick(), this.periodMs)
      this.#timer.unref()
    }
  }

  /** Deregisters `held`; nothing happens to it on later ticks. */
  release(held: Ticking): void {
    this.#held.delete(held)
  }

  #tick(): void {
    if (this.#held.size === 0) {
      clearInterval(this.#timer)
      this.#timer = undefined
      return
    }
    const now = performance.now()
    // A call that leaves (or one that joins) during the tick is simply skipped (or visited).
    for (const held of this.#held) held.tick(now)
  }
}

// One clock per period (powers of two up to MAX_TICK_MS): every call whose times allow
// the coarsest tick, which is every call with the default settings of either engine,
// shares one clock.
const clocks: Array<HoldClock | undefined> = []

/**
 * The shared clock that ticks at least every `resolutionMs`: the largest power of two
 * milliseconds no greater than it, between 1 and `MAX_TICK_MS`.
 * @example const clock = holdClock(deadlineMs / 8) // a deadline met within an eighth of itself, or 128 ms
 */
export function holdClock(resolutionMs: number): HoldClock {
  const exponent = Math.max(0, Math.min(Math.log2(MAX_TICK_MS), Math.floor(Math.log2(Math.max(1, resolutionMs)))))
  return (clocks[exponent] ??= new HoldClock(2 ** exponent))
}

/**
 * Waits for `work`, a held call's function, for up to `deadlineMs`, and settles as it
 * does if it settles in time. When the deadline passes first, `expire` decides: it lets
 * the hold go and returns the promise of the error the call fails with (this rejects
 * with it, and ignores what `work` does afterwards), or, where the hold cannot be let go
 * while `work` runs, returns nothing, and this goes on waiting for `work`.
 *
 * The deadline is watched by the shared clock of held calls (`holdClock`), which
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
