import { holdClock, type HoldClock, type Ticking } from '../hold-clock.js'
import { LeaseLostError } from '../errors/lease-lost.js'
import type { OverranError } from '../errors/overran.js'
import type { Lease } from '../../ports/leased-store.js'
import type { LeasedIo } from './io.js'

/** Which lease a heartbeat keeps alive. */
export interface HeldLease {
  /** The store as the engine reaches it when the call is timed (someone listened as it started); the lease itself otherwise. */
  timed: LeasedIo | undefined
  lease: Lease
  key: string
  leaseMs: number
  heartbeatMs: number
  /** `performance.now()` when the claim was sent: the lease is known to last until this plus `leaseMs`. */
  claimedAt: number
  /** How long the function may hold the key, from now (see `until`). */
  deadlineMs: number
}

/**
 * Keeps a claimed lease alive while the function runs: renews it every `heartbeatMs`
 * and aborts `signal` as soon as the lease is lost or may be lost, or the call's
 * deadline passed (`overrun`).
 *
 * - A renewal refused by the store means another call took over: the lease is
 *   **fenced**, and the engine writes nothing more through it.
 * - When no renewal has been confirmed for a whole lease (the store is down or slow),
 *   the lease may have run out and another call may already be running the same
 *   steps, so `signal` aborts too. The lease is not fenced then: if nobody took over,
 *   the claim still holds and the store accepts the outcome.
 *
 * A heartbeat arms no timer: it registers with the shared clock of held calls
 * (`hold-clock.ts`), whose ticks renew it once it is `heartbeatMs` old and watch its
 * lease and its deadline. The clock's period is at most half of `heartbeatMs`, half of
 * the margin `leaseMs - heartbeatMs` (so a renewal leaves before the lease it extends
 * ends), an eighth of `deadlineMs`, and 128 ms. The time is local and monotonic; "confirmed until" counts from when a renewal was *sent*, so it never
 * outlasts the store's own expiry.
 */
export class Heartbeat implements Ticking {
  readonly #lease: HeldLease
  readonly #clock: HoldClock
  // Made on first use of `signal`: most calls never read it, and an AbortController
  // is a measurable part of a fresh call's cost.
  #controller: AbortController | undefined
  #lost: LeaseLostError | OverranError | undefined
  #nextBeat: number
  #confirmedUntil: number
  readonly #deadline: Deadline
  #renewing = false
  #fenced = false
  #stopped = false

  constructor(lease: HeldLease) {
    this.#lease = lease
    this.#confirmedUntil = lease.claimedAt + lease.leaseMs
    const now = performance.now()
    this.#nextBeat = now + lease.heartbeatMs
    this.#deadline = new Deadline(now + lease.deadlineMs)
    const { heartbeatMs, leaseMs, deadlineMs } = lease
    this.#clock = holdClock(Math.min(heartbeatMs / 2, (leaseMs - heartbeatMs) / 2, deadlineMs / 8))
    this.#clock.hold(this)
  }

  /**
   * Aborted (with a `LeaseLostError` as its reason) when the lease is lost or may be,
   * or with an `OverranError` once the call's deadline passed.
   * Reading it checks the lease first (see `assertHeld`): a lease no longer confirmed
   * aborts it on the spot, so `fetch(url, { signal })` then rejects with the
   * `LeaseLostError` without sending anything.
   */
  get signal(): AbortSignal {
    this.#check()
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#lost !== undefined) this.#controller.abort(this.#lost)
    }
    return this.#controller.signal
  }

  /**
   * Throws the `LeaseLostError` if the lease is lost, or if no renewal confirms it up to
   * now. Checked synchronously against the monotonic clock: when the event loop was
   * blocked past the lease (a long synchronous parse, a GC pause) no timer could fire to
   * say so, and another call may have taken the key over meanwhile, so a holder must
   * look before it starts anything new.
   */
  assertHeld(): void {
    this.#check()
    if (this.#lost !== undefined) throw this.#lost
  }

  #check(): void {
    if (this.#lost === undefined && performance.now() >= this.#confirmedUntil) this.#lose(unconfirmed(this.#lease))
  }

  /** Why the lease is lost (or may be, or was let go at the deadline), once it is. */
  get lost(): LeaseLostError | OverranError | undefined {
    return this.#lost
  }

  /** True once the store refused a write through the lease: another call holds the key. */
  get fenced(): boolean {
    return this.#fenced
  }

  /** Records that the store refused a write through the lease, and aborts `signal`. */
  fence(message: string): LeaseLostError {
    this.#fenced = true
    const error = new LeaseLostError(message)
    // Already aborted as "may be lost": keep the signal, but record the definite cause.
    if (this.#lost === undefined) this.#lose(error)
    else this.#lost = error
    return error
  }

  /**
   * Lets the lease go at the call's deadline: stops renewing, and aborts `signal` with
   * `error`, which `assertHeld` throws from now on, so the function starts no new step.
   */
  overrun(error: OverranError): void {
    this.#lose(error)
  }

  /**
   * Waits for `work`, the function's promise, until the call's deadline (`deadlineMs`
   * from when this heartbeat started), and settles as it does if it settles in time.
   * At the deadline `expire` lets the lease go and returns the promise of the error the
   * call fails with: this rejects with it, and ignores what `work` does afterwards. The
   * heartbeat's own ticks watch the deadline, so a call registers once, not twice.
   */
  until<T>(work: PromiseLike<T>, expire: () => Promise<Error>): Promise<T> {
    return this.#deadline.until(work, expire)
  }

  /** Stops renewing and leaves the clock; the lease then runs out unless the call completes or releases it. */
  stop(): void {
    this.#stopped = true
    this.#clock.release(this)
  }

  /** One tick of the clock: the deadline first, then the lease's end, then a renewal once one is due. */
  tick(now: number): void {
    this.#deadline.tick(now)
    // Once the lease is lost only the deadline is left to watch.
    if (this.#lost !== undefined || this.#stopped) return
    if (now >= this.#confirmedUntil) {
      this.#lose(unconfirmed(this.#lease))
      return
    }
    if (now >= this.#nextBeat) {
      // Every heartbeatMs from the claim, whatever the tick: after a stall, heartbeatMs from now.
      this.#nextBeat += this.#lease.heartbeatMs
      if (this.#nextBeat <= now) this.#nextBeat = now + this.#lease.heartbeatMs
      this.#renew()
    }
  }

  #renew(): void {
    // One renewal at a time: a slow store must not pile up requests.
    if (this.#renewing) return
    this.#renewing = true
    const sentAt = performance.now()
    renewal(this.#lease).then((renewed) => {
      this.#renewing = false
      // A failed renewal (undefined) is retried at the next beat; the deadline decides when to give up.
      if (this.#stopped || renewed === undefined) return
      if (!renewed) this.fence(`The lease on key ${JSON.stringify(this.#lease.key)} was taken over by another call`)
      else this.#confirmedUntil = Math.max(this.#confirmedUntil, sentAt + this.#lease.leaseMs)
    })
  }

  /**
   * Records why the lease is gone and aborts `signal`. Renewals stop, but the deadline
   * still holds: a function that never settles after its lease was lost is answered at
   * the deadline all the same, rather than leave its caller waiting for good.
   */
  #lose(error: LeaseLostError | OverranError): void {
    if (this.#lost !== undefined) return
    this.#lost = error
    this.#controller?.abort(error)
  }
}

/** One renewal of the lease: true renewed, false refused (another call holds the key), undefined failed. */
function renewal({ timed, lease, leaseMs }: HeldLease): Promise<boolean | undefined> {
  return (timed === undefined ? lease.renew(leaseMs) : timed.renew(lease, leaseMs)).then(
    (renewed) => renewed,
    () => undefined,
  )
}

function unconfirmed({ key, leaseMs }: HeldLease): LeaseLostError {
  return new LeaseLostError(`The lease on key ${JSON.stringify(key)} was not confirmed for ${leaseMs} ms; another call may have taken over`)
}

/** A call's deadline, watched by its heartbeat's ticks: what `until` does when it passes while the function runs. */
class Deadline {
  #at: number
  #onDeadline: (() => void) | undefined

  constructor(at: number) {
    this.#at = at
  }

  until<T>(work: PromiseLike<T>, expire: () => Promise<Error>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let expired = false
      this.#onDeadline = () => {
        expired = true
        expire().then(reject, reject)
      }
      work.then(
        (value) => {
          if (expired) return
          this.#onDeadline = undefined
          resolve(value)
        },
        (error: unknown) => {
          if (expired) return
          this.#onDeadline = undefined
          reject(error)
        },
      )
    })
  }

  tick(now: number): void {
    if (now < this.#at) return
    const expire = this.#onDeadline
    this.#onDeadline = undefined
    // Nothing waits on a function that returned already: the engine stops the heartbeat next.
    this.#at = Infinity
    expire?.()
  }
}
