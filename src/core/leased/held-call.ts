import type { ResolvedCall } from '../call.js'
import { isThenable } from '../hold-clock.js'
import { storedResult, type RunResult } from '../engine.js'
import { LeaseLostError } from '../errors/lease-lost.js'
import { OutcomeTooLargeError } from '../errors/outcome-too-large.js'
import { OverranError } from '../errors/overran.js'
import { bytesOver, oversizedOutcome, serializeOutcome } from '../outcome.js'
import { isDiscarded, type Discarded } from '../result.js'
import type { LeasedContext } from './context.js'
import { Heartbeat, type HeldLease } from './heartbeat.js'
import { createStepContext, type StepContext, type StepContextInit, type StepTracker } from './steps.js'
import { storeFailure } from './store-failure.js'
import type { Lease, LeaseClaim } from './store.js'
import type { LeasedIo } from './io.js'

/** What a leased call's function returns: its value, or `discard(value)`, now or as a promise. */
export type LeasedFunction<T> = (ctx: StepContext) => T | Discarded<T> | Promise<T | Discarded<T>>

/**
 * A call that acquired its key's lease: runs the function under the lease's heartbeat
 * (`heartbeat.ts`) with its steps (`steps.ts`), then stores the outcome through the
 * lease, or, when the function failed, handles the claim as `onError` says. One per call that runs: it is itself the lease its heartbeat renews
 * (`HeldLease`) and what its steps are saved under (`StepContextInit`), so neither
 * needs a record of its own.
 */
export class HeldCall implements HeldLease, StepContextInit {
  /** The store as the engine reaches it (timed while someone listens). */
  readonly io: LeasedIo
  /** What the store handed back with the claim: every write of this call goes through it. */
  readonly lease: Lease
  readonly scope: string
  readonly key: string
  readonly leaseMs: number
  readonly heartbeatMs: number
  readonly claimedAt: number
  readonly deadlineMs: number
  readonly steps: ReadonlyMap<string, string>
  readonly heartbeat: Heartbeat
  readonly #context: LeasedContext
  readonly #ttlMs: number
  readonly #started: number
  readonly #tracker: StepTracker
  #overran: OverranError | undefined

  /**
   * Starts holding the lease `claim` granted: its heartbeat runs from here.
   * @param started `performance.now()` when the call started, which its report is timed from
   * @param claimedAt `performance.now()` when the claim was sent (see `HeldLease`)
   */
  constructor(context: LeasedContext, call: ResolvedCall, claim: Extract<LeaseClaim, { state: 'acquired' }>, started: number, claimedAt: number) {
    this.io = context.io
    this.lease = claim.lease
    this.scope = call.scope
    this.key = call.key
    this.leaseMs = context.leaseMs
    this.heartbeatMs = context.heartbeatMs
    this.claimedAt = claimedAt
    this.deadlineMs = call.deadlineMs
    this.steps = claim.steps
    this.#context = context
    this.#ttlMs = call.ttlMs
    this.#started = started
    this.heartbeat = new Heartbeat(this)
    this.#tracker = createStepContext(this)
  }

  /** Runs `fn` and ends the claim: completed with its outcome, or handled as after an error. */
  async execute<T>(fn: LeasedFunction<T>): Promise<RunResult<T>> {
    const context = this.#context
    const { scope, key, heartbeat } = this
    const started = this.#started
    let returned: T | Discarded<T>
    let outcome = 'null'
    try {
      const running = fn(this.#tracker.context)
      returned = isThenable(running) ? await heartbeat.until(running, () => this.#letGo()) : await running
      if (!isDiscarded(returned)) outcome = serializeOutcome(returned)
    } catch (error) {
      heartbeat.stop()
      if (this.#overran !== undefined && error === this.#overran) throw context.failed(this.#overran, 'overran', scope, started)
      // A step ran whose result the store cannot hold: a retry would run it again, so the
      // key is completed with the record of that instead of being given up.
      const oversized = this.#tracker.oversized()
      if (oversized !== undefined && !heartbeat.fenced) await this.#complete(oversizedOutcome(oversized))
      else await this.#giveUp()
      if (heartbeat.fenced) context.leaseChanged('fenced', scope)
      throw context.failed(error, error instanceof LeaseLostError ? 'lease-lost' : 'error', scope, started)
    }
    heartbeat.stop()
    if (heartbeat.fenced) {
      context.leaseChanged('fenced', scope)
      throw context.failed(heartbeat.lost!, 'lease-lost', scope, started)
    }
    if (isDiscarded(returned)) {
      await this.#giveUp()
      context.report('not-stored', scope, started)
      return { value: returned.value, replayed: false, stored: false }
    }
    const { maxOutcomeBytes } = context
    const outcomeBytes = bytesOver(outcome, maxOutcomeBytes)
    if (outcomeBytes !== undefined) {
      // fn ran: its effects are outside the store and cannot be rolled back, so the key
      // is completed with the record of an outcome too large to keep, never given up.
      await this.#complete(oversizedOutcome({ outcomeBytes, maxOutcomeBytes }))
      const error = new OutcomeTooLargeError(
        `The outcome of key ${JSON.stringify(key)} is ${outcomeBytes} bytes, more than the ${context.store.name} store holds (${maxOutcomeBytes} bytes): ` +
          'the call ran, and its key is recorded as completed without it, so it does not run again',
        { outcomeBytes, maxOutcomeBytes },
      )
      throw context.failed(error, 'error', scope, started)
    }
    await this.#complete(outcome)
    context.report('fresh', scope, started)
    return storedResult<T>(outcome, false)
  }

  // A failed call gives its claim back only when a retry may safely start over.
  async #giveUp(): Promise<void> {
    if (this.#context.onError === 'keep' || this.heartbeat.fenced || this.#tracker.savedCount() > 0) return
    try {
      await this.io.release(this.lease)
    } catch {
      // The lease runs out on its own; the caller's error matters more.
    }
  }

  /**
   * Stores `text` as the key's outcome, ending the claim; fails the call when the
   * store cannot say it did. Not released on failure: the outcome may still land, and
   * a retry that waits sees it.
   */
  async #complete(text: string): Promise<void> {
    const context = this.#context
    let completed: boolean
    try {
      completed = await this.io.complete(this.lease, text, this.#ttlMs)
    } catch (error) {
      throw context.failed(storeFailure(context.store.name, error), 'error', this.scope, this.#started)
    }
    if (!completed) {
      context.leaseChanged('fenced', this.scope)
      const lost = this.heartbeat.fence(`The outcome of key ${JSON.stringify(this.key)} was not stored: another call took the key over`)
      throw context.failed(lost, 'lease-lost', this.scope, this.#started)
    }
  }

  // At the deadline: no more renewals or steps, and the claim handled as after an error.
  async #letGo(): Promise<OverranError> {
    const error = new OverranError(
      `The call with key ${JSON.stringify(this.key)} still ran ${this.deadlineMs} ms after it took its key (deadlineMs): its lease was let go and nothing was stored; retry with the same key`,
    )
    this.heartbeat.overrun(error)
    await this.#giveUp()
    return (this.#overran = error)
  }
}
