/**
 * The clock of held calls (DESIGN "Bounded holds"): one timer for every call that holds
 * a key, rather than one per call. A held call registers itself (one `Set.add`) and
 * leaves at its end; while anything is registered the clock ticks, and each tick asks
 * every registered call what is due (a renewal, the end of a confirmed lease, a
 * deadline). Most calls end before the first tick: they arm no timer of their own, and
 * do nothing on any tick. The transactional engine's deadlines (`withinDeadline`) and
 * the leased engine's heartbeats (`Heartbeat`) share it.
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
