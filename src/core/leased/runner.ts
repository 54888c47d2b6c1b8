import type { CallOutcome, CheckedCall, CheckedFunction, Returned } from '../call.js'
import { FingerprintMismatchError } from '../errors/fingerprint-mismatch.js'
import { InFlightError } from '../errors/in-flight.js'
import { LeaseLostError } from '../errors/lease-lost.js'
import { OutcomeTooLargeError } from '../errors/outcome-too-large.js'
import { OverranError } from '../errors/overran.js'
import { isThenable } from '../hold-clock.js'
import { bytesOver, oversizedOutcome, replayedValue } from '../outcome.js'
import type { KeyRecord } from '../../ports/key-store.js'
import type { LeasedContext } from './context.js'
import { deriveKey } from './derive.js'
import { Heartbeat, type HeldLease } from './heartbeat.js'
import { FIRST_POLL_MS, nextPoll, pollAgain } from './in-flight.js'
import type { LeasedIo } from './io.js'
import { assertStepName } from './step-name.js'
import { LeaseSteps, type StepContext, type StepContextInit } from './steps.js'
import { storeFailure } from './store-failure.js'
import type { Lease, LeaseClaim } from '../../ports/leased-store.js'

/** What the leased engine does with a `LeasedStore` claim (a lease is never stale, so never retried). */
export type LeaseDecision =
  /** The key is this call's: run the function under the lease the store granted (and its saved steps). */
  | { readonly kind: 'run'; readonly claim: Extract<LeaseClaim, { state: 'acquired' }> }
  /** Answer with the stored outcome of an earlier call of the same request; the function does not run. */
  | { readonly kind: 'replay'; readonly record: KeyRecord }
  /** The key was first used with another request (`running`: which still runs): refused. */
  | { readonly kind: 'mismatch'; readonly running: boolean }
  /** Another call of the same request holds the key: poll until the wait is over. */
  | { readonly kind: 'in-flight' }

const MISMATCH: LeaseDecision = { kind: 'mismatch', running: false }
const MISMATCH_RUNNING: LeaseDecision = { kind: 'mismatch', running: true }
const IN_FLIGHT: LeaseDecision = { kind: 'in-flight' }

/**
 * What a call does with what its store found for the key, given the call's own request
 * `fingerprint`. Pure: it reads its arguments only, and allocates only for what carries
 * the claim's data (a replay, a lease granted).
 * @example
 * const decision = decideLease(claim, fingerprint)
 */
export function decideLease(claim: LeaseClaim, fingerprint: string): LeaseDecision {
  switch (claim.state) {
    case 'acquired':
      return { kind: 'run', claim }
    case 'completed':
      return claim.record.fingerprint === fingerprint ? { kind: 'replay', record: claim.record } : MISMATCH
    case 'running':
      return claim.fingerprint === fingerprint ? IN_FLIGHT : MISMATCH_RUNNING
  }
}

/**
 * Runs the calls of one leased engine, made once by `createLeasedIdem`. A call claims its
 * key, has `decideLease` say what the claim means, and acts on it: replays the stored
 * outcome, refuses a different request, waits for the call in flight (`in-flight.ts`),
 * or holds the lease and runs the function (`HeldCall`). Its store's round trips are
 * timed (`LeasedIo`) when someone listens as the call starts, and go straight to the
 * store otherwise.
 */
export class LeasedRunner {
  readonly #context: LeasedContext

  constructor(context: LeasedContext) {
    this.#context = context
  }

  /** The checked run (`CheckedRun`). An arrow, made with the runner, so that it works taken off it. */
  readonly call = async <V>(call: CheckedCall, fn: CheckedFunction<StepContext, V>): Promise<CallOutcome<V>> => {
    const context = this.#context
    const started = performance.now()
    const { scope, key, fingerprint } = call
    const timed = context.events.listening ? context.io : undefined
    const deadline = started + call.waitMs
    // A claim acquired after finding the key running is one whose holder's lease ran out.
    let sawRunning = false
    for (let pause = FIRST_POLL_MS; ; pause = nextPoll(pause)) {
      const claimedAt = performance.now()
      let claim: LeaseClaim
      try {
        const { store, leaseMs } = context
        claim = await (timed === undefined ? store.claim(scope, key, fingerprint, leaseMs, call.ttlMs) : timed.claim(scope, key, fingerprint, leaseMs, call.ttlMs))
      } catch (error) {
        return context.failed(storeFailure(context.store.name, error), 'error', scope, started)
      }
      const decision = decideLease(claim, fingerprint)
      switch (decision.kind) {
        case 'run':
          // Steps are only ever resumed after their holder's lease ran out (a failed holder
          // with steps keeps its claim), so resuming them is a takeover too.
          if (sawRunning || decision.claim.steps.size > 0) context.leaseChanged('takeover', scope)
          return await new HeldCall(context, call, decision.claim, started, claimedAt, timed).execute(fn)
        case 'mismatch': {
          const still = decision.running ? ' (that request is still in progress)' : ''
          const error = new FingerprintMismatchError(`Key ${JSON.stringify(key)} was first used with a different request${still}; use a new key for a new request`)
          return context.failed(error, 'mismatch', scope, started)
        }
        case 'replay': {
          let value: unknown
          try {
            value = replayedValue(decision.record.outcome)
          } catch (error) {
            return context.failed(error, 'error', scope, started)
          }
          if (context.onOutcome !== undefined || context.events.listening) context.report('replayed', scope, started)
          return { kind: 'replayed', value }
        }
        case 'in-flight': {
          // Poll until the call's wait is over.
          sawRunning = true
          const polled = pollAgain(deadline, pause)
          if (polled === undefined) return context.failed(new InFlightError(`A call with key ${JSON.stringify(key)} is still in progress (waited ${call.waitMs} ms)`), 'in-flight', scope, started)
          await polled
        }
      }
    }
  }
}

/**
 * A call that acquired its key's lease: runs the function under the lease's heartbeat,
 * then stores the outcome through the lease, or, when the function failed, handles the
 * claim as `onError` says. It is itself the lease its heartbeat renews (`HeldLease`) and
 * what its steps are saved under (`StepContextInit`); the steps are made by the first
 * step the function takes (`LeaseSteps`), so a call without steps runs none of them.
 */
class HeldCall implements HeldLease, StepContextInit {
  readonly timed: LeasedIo | undefined
  readonly store: LeasedContext['store']
  readonly maxOutcomeBytes: number
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
  #stepRunner: LeaseSteps | undefined
  #overran: OverranError | undefined

  constructor(context: LeasedContext, call: CheckedCall, claim: Extract<LeaseClaim, { state: 'acquired' }>, started: number, claimedAt: number, timed: LeasedIo | undefined) {
    this.timed = timed
    this.store = context.store
    this.maxOutcomeBytes = context.maxOutcomeBytes
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
  }

  /** The call's steps, made by the first step (or fencing token) the function asks for. */
  get stepRunner(): LeaseSteps {
    return (this.#stepRunner ??= new LeaseSteps(this))
  }

  /** Runs `fn` and ends the claim: completed with its outcome, or handled as after an error. */
  async execute<V>(fn: CheckedFunction<StepContext, V>): Promise<CallOutcome<V>> {
    const context = this.#context
    const { scope, heartbeat } = this
    const started = this.#started
    let returned: Returned<V>
    try {
      const running = fn(new CallContext(this))
      returned = isThenable(running) ? await heartbeat.until(running, () => this.#letGo()) : running
    } catch (error) {
      return await this.#failed(error)
    }
    heartbeat.stop()
    if (heartbeat.fenced) {
      context.leaseChanged('fenced', scope)
      return context.failed(heartbeat.lost!, 'lease-lost', scope, started)
    }
    if (returned.kind === 'discard') {
      await this.#giveUp()
      context.report('not-stored', scope, started)
      return { kind: 'not-stored', value: returned.value }
    }
    const { outcome } = returned
    const { maxOutcomeBytes } = this
    // A UTF-16 unit is at most 3 bytes of UTF-8: most outcomes are measured by their length alone.
    const outcomeBytes = outcome.length * 3 <= maxOutcomeBytes ? undefined : bytesOver(outcome, maxOutcomeBytes)
    if (outcomeBytes !== undefined) {
      // fn ran: its effects are outside the store and cannot be rolled back, so the key
      // is completed with the record of an outcome too large to keep, never given up.
      const error = new OutcomeTooLargeError(
        `The outcome of key ${JSON.stringify(this.key)} is ${outcomeBytes} bytes, more than the ${this.store.name} store holds (${maxOutcomeBytes} bytes): ` +
          'the call ran, and its key is recorded as completed without it, so it does not run again',
        { outcomeBytes, maxOutcomeBytes },
      )
      return (await this.#complete(oversizedOutcome({ outcomeBytes, maxOutcomeBytes }))) ?? context.failed(error, 'error', scope, started)
    }
    const failed = await this.#complete(outcome)
    if (failed !== undefined) return failed
    if (context.onOutcome !== undefined || context.events.listening) context.report('fresh', scope, started)
    return { kind: 'fresh', value: returned.value, outcome }
  }

  // The function threw (or ran past its deadline): the claim handled as `onError` says.
  async #failed(error: unknown): Promise<CallOutcome<never>> {
    const context = this.#context
    const { scope, heartbeat } = this
    heartbeat.stop()
    if (this.#overran !== undefined && error === this.#overran) return context.failed(this.#overran, 'overran', scope, this.#started)
    // A step ran whose result the store cannot hold: a retry would run it again, so the
    // key is completed with the record of that instead of being given up.
    const oversized = this.#stepRunner?.oversized()
    if (oversized !== undefined && !heartbeat.fenced) {
      const failed = await this.#complete(oversizedOutcome(oversized))
      if (failed !== undefined) return failed
    } else await this.#giveUp()
    if (heartbeat.fenced) context.leaseChanged('fenced', scope)
    return context.failed(error, error instanceof LeaseLostError ? 'lease-lost' : 'error', scope, this.#started)
  }

  // A failed call gives its claim back only when a retry may safely start over.
  async #giveUp(): Promise<void> {
    const saved = this.#stepRunner?.savedCount() ?? this.steps.size
    if (this.#context.onError === 'keep' || this.heartbeat.fenced || saved > 0) return
    try {
      await (this.timed === undefined ? this.lease.release() : this.timed.release(this.lease))
    } catch {
      // The lease runs out on its own; the caller's error matters more.
    }
  }

  /**
   * Stores `text` as the key's outcome, ending the claim; the call's refusal when the
   * store cannot say it did. Not released on failure: the outcome may still land, and a
   * retry that waits sees it.
   */
  async #complete(text: string): Promise<CallOutcome<never> | undefined> {
    const context = this.#context
    let completed: boolean
    try {
      completed = await (this.timed === undefined ? this.lease.complete(text, this.#ttlMs) : this.timed.complete(this.lease, text, this.#ttlMs))
    } catch (error) {
      return context.failed(storeFailure(this.store.name, error), 'error', this.scope, this.#started)
    }
    if (completed) return undefined
    context.leaseChanged('fenced', this.scope)
    const lost = this.heartbeat.fence(`The outcome of key ${JSON.stringify(this.key)} was not stored: another call took the key over`)
    return context.failed(lost, 'lease-lost', this.scope, this.#started)
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

/** What the function sees: `step`, `derive` and `fencingToken` stay bound, so they may be taken off the context. */
class CallContext implements StepContext {
  readonly step: StepContext['step']
  readonly derive: StepContext['derive']
  readonly fencingToken: StepContext['fencingToken']
  readonly #heartbeat: Heartbeat

  constructor(held: HeldCall) {
    const { scope, key, heartbeat } = held
    this.#heartbeat = heartbeat
    this.step = (name, fn) => held.stepRunner.step(name, fn)
    this.fencingToken = () => held.stepRunner.fencingToken()
    this.derive = (name) => {
      assertStepName(name)
      return deriveKey(scope, key, name)
    }
  }

  get signal(): AbortSignal {
    return this.#heartbeat.signal
  }
}
