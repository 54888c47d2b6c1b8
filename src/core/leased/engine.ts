import { CHECKED_RUN, resolveCall, runResult, serialisedFunction, type CallFunction, type CallOptions, type CheckedRun, type RunResult } from '../call.js'
import type { EngineSettings } from '../engine-options.js'
import type { Discarded } from '../result.js'
import { optionNames } from '../errors/option-checks.js'
import { LeasedContext } from './context.js'
import { leasedConfig, type LeasedIdemOptions } from './options.js'
import { LeasedRunner } from './runner.js'
import type { StepContext } from './steps.js'
import type { LeasedStore } from '../../ports/leased-store.js'

export { DEFAULT_LEASE_MS, type LeasedErrorPolicy, type LeasedIdemOptions } from './options.js'

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
  /** The checked run idem's front ends call, a call checked once, one outcome back (see `CheckedRun`). Internal to idem's front ends. @internal */
  readonly [CHECKED_RUN]: CheckedRun<StepContext>
}

const RUN_OPTIONS = optionNames<CallOptions>({ scope: true, key: true, fingerprint: true, input: true, ttlMs: true, waitMs: true, deadlineMs: true })

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
  const config = leasedConfig(options)
  const { call } = new LeasedRunner(new LeasedContext(config))
  const run = async <T>(given: LeasedRunOptions, fn: CallFunction<StepContext, T>): Promise<RunResult<T>> =>
    runResult(await call(resolveCall(given, config.defaults, RUN_OPTIONS), serialisedFunction(fn)))
  return { run, store: config.store, settings: config.settings, [CHECKED_RUN]: call }
}
