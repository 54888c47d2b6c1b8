import { DEFAULT_TTL_MS, DEFAULT_WAIT_MS, replayedResult, storedResult, type EngineSettings, type RunResult } from '../engine.js'
import { idemEvents, type EventStream, type OutcomeEvent, type OutcomeKind } from '../events.js'
import { isDiscarded, type Discarded } from '../result.js'
import { FingerprintMismatchError } from '../errors/fingerprint-mismatch.js'
import { InFlightError } from '../errors/in-flight.js'
import { InvalidOptionError } from '../errors/invalid-option.js'
import { LeaseLostError } from '../errors/lease-lost.js'
import { OutcomeTooLargeError } from '../errors/outcome-too-large.js'
import { OverranError } from '../errors/overran.js'
import { DEFAULT_DEADLINE_MS, isThenable } from '../deadline.js'
import { storeFailure } from './store-failure.js'
import { Heartbeat } from './heartbeat.js'
import { callReporter, resolveCall, type CallOptions } from '../call.js'
import { assertDuration, assertKnownOptions, optionNames } from '../validate.js'
import type { LeaseClaim, LeasedStore } from './store.js'
import { assertOutcomeLimit, bytesOver, oversizedOutcome, serializeOutcome } from '../outcome.js'
import { createStepContext, type StepContext } from './steps.js'
import { decide } from '../decide.js'
import { timedLeasedStore } from './timed-store.js'

/** 5 seconds: how long a claim holds without renewal by default, so a crashed holder blocks its key for no longer. */
export const DEFAULT_LEASE_MS = 5_000

/**
 * What a failed call (its function threw, or discarded its outcome) does with its claim:
 * - `'release-if-no-steps'`: with no completed step, the claim is released and a retry
 *   runs afresh at once (DESIGN "What is stored"). With completed steps the key stays
 *   resumable: the lease is left to run out, then the same request takes over after
 *   the last completed step; a different request is refused (`FingerprintMismatchError`).
 * - `'keep'`: the claim is never released on failure; duplicates wait (or are refused as in flight)
 *   until the lease runs out. For effects whose result may still be in doubt.
 */
export type LeasedErrorPolicy = 'release-if-no-steps' | 'keep'

/**
 * What `createLeasedIdem` takes: the store, the lease and its renewal, retention, wait
 * and the error policy.
 */
export interface LeasedIdemOptions {
  /** Where claims, steps and outcomes live (e.g. `redisStore(...)`). */
  store: LeasedStore
  /** How long a claim holds without renewal; a crashed holder's key is taken over after this. @default 5000 */
  leaseMs?: number
  /** How often the running call renews its lease; less than `leaseMs`. @default leaseMs / 3 */
  heartbeatMs?: number
  /** Retention of a stored outcome (and of an unfinished key, beyond its lease). @default 24 h */
  ttlMs?: number
  /** How long a duplicate polls for the first call's outcome before `InFlightError`. @default 5000 */
  waitMs?: number
  /**
   * How long the function may hold the key (from when it starts). Past it the heartbeat
   * stops, `ctx.signal` aborts, no new step starts, the claim is handled as after an
   * error (`onError`: released when no step was saved) and the call fails with
   * `OverranError`; its outcome is never stored. @default 300000 (5 minutes)
   */
  deadlineMs?: number
  /** What a failed call does with its claim. @default 'release-if-no-steps' */
  onError?: LeasedErrorPolicy
  /** Where the engine reports each call (`{ type: 'call', engine: 'leased', … }`). @default the process-wide `idemEvents` */
  events?: EventStream
  /** Called once per call with its outcome, besides the event stream. Must not throw. */
  onOutcome?: (event: OutcomeEvent) => void
}

/** A leased call: what identifies it, as for the transactional engine. */
export type LeasedRunOptions = CallOptions

/**
 * The leased engine, for effects outside any transaction: a claim under a renewed lease,
 * resumable steps, the outcome stored once (see `createLeasedIdem`).
 */
export interface LeasedIdem {
  /**
   * Runs `fn` to completion at most once per `(scope, key)`, under a lease: claims the
   * key, renews the lease while `fn` runs, and stores the outcome only if the lease
   * still holds. A repeat returns the stored outcome without running `fn`; a repeat
   * while the first runs polls for up to `waitMs`. If a holder crashes, the next call
   * after its lease runs out takes over and resumes after the last completed step
   * (`ctx.step`). The returned value is the stored JSON form, on the first call and on
   * replays alike. `fn` may return `discard(value)`: `value` comes back unstored and the
   * claim is handled as after an error (see `onError`), so a retry runs again.
   *
   * @throws FingerprintMismatchError the key was used with a different request (also while that one runs)
   * @throws InFlightError another call holds the key for longer than `waitMs`
   * @throws LeaseLostError the lease was taken over before the outcome was stored; nothing was stored
   * @throws OverranError `fn` still ran after `deadlineMs`: the lease was let go, nothing was stored
   * @throws StoreUnavailableError / MigrationRequiredError from the store; `fn` did not run, or its outcome is not known to be stored
   * @throws OutcomeNotSerializableError `fn` returned something without a JSON form
   * @throws OutcomeTooLargeError `fn` returned something larger than the store holds
   *   (`maxOutcomeBytes`), or failed after a step whose result was: `fn` ran, so the key
   *   is completed with a record of that instead of the outcome, and every retry gets
   *   this error without running anything again
   * @throws whatever `fn` throws, after handling the claim as `onError` says
   */
  run<T>(options: LeasedRunOptions, fn: (ctx: StepContext) => T | Discarded<T> | Promise<T | Discarded<T>>): Promise<RunResult<T>>
  readonly store: LeasedStore
  /** What was set explicitly at creation (see `EngineSettings`). */
  readonly settings: EngineSettings
}

const OPTIONS = optionNames<LeasedIdemOptions>({
  store: true, leaseMs: true, heartbeatMs: true, ttlMs: true, waitMs: true, deadlineMs: true, onError: true, events: true, onOutcome: true,
})
const RUN_OPTIONS = optionNames<LeasedRunOptions>({ scope: true, key: true, fingerprint: true, input: true, ttlMs: true, waitMs: true, deadlineMs: true })

// Duplicates poll with exponential backoff, jittered so that a crowd of them spreads out.
const FIRST_POLL_MS = 10
const MAX_POLL_MS = 250

/**
 * Creates the leased engine over a leased store (Redis, or the SQL and memory stores'
 * leased mode). Use it when the effects live outside the store; use `createIdem` when
 * they can share the key's database transaction.
 *
 * @example
 * const idem = createLeasedIdem({ store: redisStore({ client: new Redis() }) })
 * const { value } = await idem.run({ scope: 'acct_1', key, input: order }, async (ctx) => {
 *   const charge = await ctx.step('charge', () => provider.charge(order, { idempotencyKey: ctx.derive('charge') }))
 *   await ctx.step('email', () => mailer.send(order.email, charge.id))
 *   return { chargeId: charge.id }
 * })
 */
export function createLeasedIdem(options: LeasedIdemOptions): LeasedIdem {
  assertKnownOptions('createLeasedIdem', options, OPTIONS)
  const {
    store,
    leaseMs = DEFAULT_LEASE_MS,
    heartbeatMs = Math.max(1, Math.floor(leaseMs / 3)),
    ttlMs = DEFAULT_TTL_MS,
    waitMs = DEFAULT_WAIT_MS,
    deadlineMs = DEFAULT_DEADLINE_MS,
    onError = 'release-if-no-steps',
    events = idemEvents,
    onOutcome,
  } = options
  if (store === null || typeof store !== 'object' || typeof store.claim !== 'function') {
    throw new InvalidOptionError('createLeasedIdem: option "store" must be a leased store (e.g. redisStore(...))')
  }
  assertOutcomeLimit('createLeasedIdem', store)
  const { maxOutcomeBytes } = store
  assertDuration('createLeasedIdem: option "leaseMs"', leaseMs, 2)
  assertDuration('createLeasedIdem: option "heartbeatMs"', heartbeatMs, 1)
  if (heartbeatMs >= leaseMs) {
    throw new InvalidOptionError(`createLeasedIdem: option "heartbeatMs" (${heartbeatMs}) must be less than "leaseMs" (${leaseMs})`)
  }
  assertDuration('createLeasedIdem: option "ttlMs"', ttlMs, 1)
  assertDuration('createLeasedIdem: option "waitMs"', waitMs, 0)
  assertDuration('createLeasedIdem: option "deadlineMs"', deadlineMs, 1)
  if (onError !== 'release-if-no-steps' && onError !== 'keep') {
    throw new InvalidOptionError('createLeasedIdem: option "onError" must be "release-if-no-steps" or "keep"')
  }
  if (onOutcome !== undefined && typeof onOutcome !== 'function') {
    throw new InvalidOptionError('createLeasedIdem: option "onOutcome" must be a function')
  }
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') {
    throw new InvalidOptionError('createLeasedIdem: option "events" must be an event stream (createEventStream())')
  }
  const settings: EngineSettings = {
    ...(options.ttlMs === undefined ? {} : { ttlMs }),
    ...(options.waitMs === undefined ? {} : { waitMs }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs }),
  }

  const report = callReporter(events, onOutcome, 'leased', store.name)
  // Every round trip, the heartbeat's and the steps' included, goes through this one.
  const io = timedLeasedStore(store, events)
  const leaseChanged = (change: 'takeover' | 'lost' | 'fenced', scope: string): void => {
    if (events.listening) events.emit({ type: 'lease', change, store: store.name, scope })
  }


  function fail(error: Error, kind: OutcomeKind, scope: string, started: number): never {
    if (kind === 'lease-lost') leaseChanged('lost', scope)
    report(kind, scope, started, error)
    throw error
  }

  async function run<T>(options: LeasedRunOptions, fn: (ctx: StepContext) => T | Discarded<T> | Promise<T | Discarded<T>>): Promise<RunResult<T>> {
    const started = performance.now()
    const { scope, key, fingerprint, ttlMs: callTtl, waitMs: callWait, deadlineMs: callDeadline } = resolveCall(options, { ttlMs, waitMs, deadlineMs }, RUN_OPTIONS)
    const deadline = started + callWait

    // A claim acquired after finding the key running is one whose holder's lease ran out.
    let sawRunning = false
    for (let pause = FIRST_POLL_MS; ; pause = Math.min(pause * 2, MAX_POLL_MS)) {
      const claimedAt = performance.now()
      let claim: LeaseClaim
      try {
        claim = await io.claim(scope, key, fingerprint, leaseMs, callTtl)
      } catch (error) {
        fail(storeFailure(store.name, error), 'error', scope, started)
      }
      const decision = decide(claim, fingerprint)
      if (decision.kind === 'run') {
        // Steps are only ever resumed after their holder's lease ran out (a failed holder
        // with steps keeps its claim), so resuming them is a takeover too.
        if (sawRunning || decision.claim.steps.size > 0) leaseChanged('takeover', scope)
        return await execute(decision.claim, fn, { scope, key, fingerprint, ttlMs: callTtl, deadlineMs: callDeadline, started, claimedAt })
      }
      if (decision.kind === 'mismatch') {
        const still = decision.running ? ' (that request is still in progress)' : ''
        fail(
          new FingerprintMismatchError(`Key ${JSON.stringify(key)} was first used with a different request${still}; use a new key for a new request`),
          'mismatch',
          scope,
          started,
        )
      }
      if (decision.kind === 'replay') {
        let replay: RunResult<T>
        try {
          replay = replayedResult<T>(decision.record.outcome)
        } catch (error) {
          fail(error as Error, 'error', scope, started)
        }
        report('replayed', scope, started)
        return replay
      }
      // In flight: poll until the call's wait is over.
      sawRunning = true
      const left = deadline - performance.now()
      if (left <= 0) {
        fail(
          new InFlightError(`A call with key ${JSON.stringify(key)} is still in progress (waited ${callWait} ms)`),
          'in-flight',
          scope,
          started,
        )
      }
      await sleep(Math.min(left, pause * (0.5 + Math.random() * 0.5)))
    }
  }

  async function execute<T>(
    claim: Extract<LeaseClaim, { state: 'acquired' }>,
    fn: (ctx: StepContext) => T | Discarded<T> | Promise<T | Discarded<T>>,
    call: { scope: string; key: string; fingerprint: string; ttlMs: number; deadlineMs: number; started: number; claimedAt: number },
  ): Promise<RunResult<T>> {
    const { scope, key, started } = call
    const { token } = claim
    const heartbeat = new Heartbeat({ store: io, scope, key, token, leaseMs, heartbeatMs, claimedAt: call.claimedAt, deadlineMs: call.deadlineMs })
    const steps = createStepContext({ store: io, scope, key, token, steps: claim.steps, heartbeat })

    // A failed call gives its claim back only when a retry may safely start over.
    async function giveUp(): Promise<void> {
      if (onError === 'keep' || heartbeat.fenced || steps.savedCount() > 0) return
      try {
        await io.release(scope, key, token)
      } catch {
        // The lease runs out on its own; the caller's error matters more.
      }
    }

    /**
     * Stores `text` as the key's outcome, ending the claim; fails the call when the
     * store cannot say it did. Not released on failure: the outcome may still land, and
     * a retry that waits sees it.
     */
    async function complete(text: string): Promise<void> {
      let completed: boolean
      try {
        completed = await io.complete(scope, key, token, text, call.ttlMs)
      } catch (error) {
        fail(storeFailure(store.name, error), 'error', scope, started)
      }
      if (!completed) {
        leaseChanged('fenced', scope)
        fail(heartbeat.fence(`The outcome of key ${JSON.stringify(key)} was not stored: another call took the key over`), 'lease-lost', scope, started)
      }
    }

    // At the deadline: no more renewals or steps, and the claim handled as after an error.
    async function letGo(): Promise<OverranError> {
      const error = new OverranError(
        `The call with key ${JSON.stringify(key)} still ran ${call.deadlineMs} ms after it took its key (deadlineMs): its lease was let go and nothing was stored; retry with the same key`,
      )
      heartbeat.overrun(error)
      await giveUp()
      return error
    }

    let returned: T | Discarded<T>
    let outcome = 'null'
    let overran: OverranError | undefined
    try {
      const running = fn(steps.context)
      returned = isThenable(running) ? await heartbeat.until(running, async () => (overran = await letGo())) : await running
      if (!isDiscarded(returned)) outcome = serializeOutcome(returned)
    } catch (error) {
      if (overran !== undefined && error === overran) fail(overran, 'overran', scope, started)
      heartbeat.stop()
      // A step ran whose result the store cannot hold: a retry would run it again, so the
      // key is completed with the record of that instead of being given up.
      const oversized = steps.oversized()
      if (oversized !== undefined && !heartbeat.fenced) await complete(oversizedOutcome(oversized))
      else await giveUp()
      if (heartbeat.fenced) leaseChanged('fenced', scope)
      fail(error as Error, error instanceof LeaseLostError ? 'lease-lost' : 'error', scope, started)
    }
    heartbeat.stop()
    if (heartbeat.fenced) {
      leaseChanged('fenced', scope)
      fail(heartbeat.lost!, 'lease-lost', scope, started)
    }
    if (isDiscarded(returned)) {
      await giveUp()
      report('not-stored', scope, started)
      return { value: returned.value, replayed: false, stored: false }
    }
    const outcomeBytes = bytesOver(outcome, maxOutcomeBytes)
    if (outcomeBytes !== undefined) {
      // fn ran: its effects are outside the store and cannot be rolled back, so the key
      // is completed with the record of an outcome too large to keep, never given up.
      await complete(oversizedOutcome({ outcomeBytes, maxOutcomeBytes }))
      fail(
        new OutcomeTooLargeError(
          `The outcome of key ${JSON.stringify(key)} is ${outcomeBytes} bytes, more than the ${store.name} store holds (${maxOutcomeBytes} bytes): ` +
            'the call ran, and its key is recorded as completed without it, so it does not run again',
          { outcomeBytes, maxOutcomeBytes },
        ),
        'error',
        scope,
        started,
      )
    }
    await complete(outcome)
    report('fresh', scope, started)
    return storedResult<T>(outcome, false)
  }

  return { run, store, settings }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
