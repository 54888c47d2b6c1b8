import type { Heartbeat } from './heartbeat.js'
import { storeFailure } from './store-failure.js'
import { assertStepName } from './step-name.js'
import type { Lease } from '../../ports/leased-store.js'
import type { LeasedIo } from './io.js'
import { OutcomeTooLargeError } from '../errors/outcome-too-large.js'
import { bytesOver, parseOutcome, serializeOutcome, type OversizedSizes } from '../outcome.js'

/**
 * What a leased call's function receives: checkpointed steps, derived downstream keys,
 * and the lease it runs under.
 */
export interface StepContext {
  /**
   * Runs `fn` once per `(scope, key, name)` and persists its result before returning,
   * so a call that crashes or loses its lease later resumes here instead of running
   * `fn` again: after a takeover, a completed step returns its stored result and `fn`
   * is not called. The result is returned in its stored JSON form on the first run
   * and on resumption alike (as with outcomes). A name used twice in one call returns
   * the first result. `fn` gets `signal`, to pass to `fetch` and the like.
   *
   * Put each external effect in its own step, and make the effect itself idempotent
   * (`derive(name)` as the provider's idempotency key): a call can die after the
   * effect and before its result is saved.
   *
   * @throws LeaseLostError when the lease is lost or no longer confirmed (checked
   *   synchronously before `fn` starts, so a holder whose event loop was blocked past its
   *   lease finds out even though no timer fired): before `fn` runs, `fn` is not run;
   *   after, the result is not saved (the call that took over decides)
   * @throws StoreUnavailableError when the result could not be saved
   * @throws OutcomeNotSerializableError when the result has no exact JSON form
   * @throws OutcomeTooLargeError when the result is larger than the store holds
   *   (`maxOutcomeBytes`): its effect ran but cannot be checkpointed, so unless `fn`
   *   (the call's) recovers and returns, the call fails and its key is recorded as
   *   completed without an outcome: a retry gets this error and runs nothing again
   * @example
   * const charge = await ctx.step('charge', () => provider.charge({ amount }, { idempotencyKey: ctx.derive('charge') }))
   */
  step<T>(name: string, fn: (signal: AbortSignal) => T | Promise<T>): Promise<T>
  /**
   * A stable idempotency key for a downstream call, the same in every attempt and
   * after every takeover: `deriveKey(scope, key, name)`, 64 hex characters.
   * @example await mailer.send(message, { idempotencyKey: ctx.derive('email') })
   */
  derive(name: string): string
  /**
   * This call's fencing token, for storage outside idem that checks fencing tokens (a
   * write carrying a token lower than the last it saw is refused): a safe integer greater
   * than every earlier holder's, the same on every read in this call. Asked of the store
   * when read (some stores need a round trip for it), so read it where you pass it on.
   * @throws LeaseLostError when the lease no longer holds (checked first on the spot,
   *   as before a step, then by the store); `OverranError` past the call's deadline
   * @throws StoreUnavailableError when the store could not be asked
   * @example await ledger.write(entry, { fencingToken: await ctx.fencingToken() })
   */
  fencingToken(): Promise<number>
  /**
   * Aborted, with a `LeaseLostError` as its reason, when the lease is lost (or cannot be
   * renewed). Reading it checks the lease on the spot, so it is aborted once the lease
   * is no longer confirmed, also when the event loop was blocked past it and no timer
   * could fire: `fetch(url, { signal: ctx.signal })` then rejects with the
   * `LeaseLostError` without sending anything.
   */
  readonly signal: AbortSignal
}

/** What the steps of one held lease are saved under: the lease and the store it speaks to. */
export interface StepContextInit {
  /** The store as the engine reaches it when the call is timed (someone listened as it started); the lease itself otherwise. */
  timed: LeasedIo | undefined
  /** The store, for its name in errors. */
  store: { readonly name: string }
  /** The largest step result the store holds. */
  maxOutcomeBytes: number
  lease: Lease
  scope: string
  key: string
  /** Results saved by earlier holders, by step name (JSON text). */
  steps: ReadonlyMap<string, string>
  heartbeat: Heartbeat
}

/**
 * The steps of one held lease, made by the first step its call takes (or its first
 * fencing token): the results saved by this call and the steps running now. A call
 * without steps never makes one.
 */
export class LeaseSteps {
  readonly #init: StepContextInit
  // Saved by this call (resumed ones are in `init.steps`).
  #saved: Map<string, string> | undefined
  // Concurrent calls of one step share its single run.
  #running: Map<string, Promise<unknown>> | undefined
  #oversized: OversizedSizes | undefined

  constructor(init: StepContextInit) {
    this.#init = init
  }

  /** How many steps are known to be saved: resumed ones and ones saved by this call. */
  savedCount(): number {
    return this.#init.steps.size + (this.#saved?.size ?? 0)
  }

  /** The sizes of the first step of this call whose result was too large to save: its effect ran, and a retry must not run it again. */
  oversized(): OversizedSizes | undefined {
    return this.#oversized
  }

  /** `StepContext.step`. */
  async step<T>(name: string, fn: (signal: AbortSignal) => T | Promise<T>): Promise<T> {
    assertStepName(name)
    const text = this.#init.steps.get(name) ?? this.#saved?.get(name)
    if (text !== undefined) return parseOutcome<T>(text)
    const running = (this.#running ??= new Map())
    const pending = running.get(name)
    if (pending !== undefined) return (await pending) as T
    const run = this.#run(name, fn)
    running.set(name, run)
    const forget = (): void => {
      running.delete(name)
    }
    run.then(forget, forget)
    return await run
  }

  async #run<T>(name: string, fn: (signal: AbortSignal) => T | Promise<T>): Promise<T> {
    const { timed, store, lease, key, heartbeat, maxOutcomeBytes } = this.#init
    // A holder that may have been replaced must not start new effects.
    heartbeat.assertHeld()
    const value = await fn(heartbeat.signal)
    const text = serializeOutcome(value)
    const outcomeBytes = bytesOver(text, maxOutcomeBytes)
    if (outcomeBytes !== undefined) {
      const sizes = { outcomeBytes, maxOutcomeBytes }
      this.#oversized ??= sizes
      throw new OutcomeTooLargeError(
        `The result of step ${JSON.stringify(name)} of key ${JSON.stringify(key)} is ${outcomeBytes} bytes, more than the ${store.name} store holds ` +
          `(${maxOutcomeBytes} bytes): the step ran but cannot be saved, so unless the call recovers, its key is recorded as completed without an outcome`,
        sizes,
      )
    }
    // Known to be fenced: the store would refuse the write anyway.
    if (heartbeat.fenced) throw heartbeat.lost!
    let stored: boolean
    try {
      stored = await (timed === undefined ? lease.saveStep(name, text) : timed.saveStep(lease, name, text))
    } catch (error) {
      throw storeFailure(store.name, error)
    }
    if (!stored) {
      throw heartbeat.fence(`Step ${JSON.stringify(name)} of key ${JSON.stringify(key)} was not saved: another call took the key over`)
    }
    ;(this.#saved ??= new Map()).set(name, text)
    return parseOutcome<T>(text)
  }

  /** `StepContext.fencingToken`. */
  async fencingToken(): Promise<number> {
    const { store, lease, key, heartbeat } = this.#init
    heartbeat.assertHeld()
    let token: number | undefined
    try {
      token = await lease.fencingToken()
    } catch (error) {
      throw storeFailure(store.name, error)
    }
    if (token === undefined) throw heartbeat.fence(`The lease on key ${JSON.stringify(key)} no longer holds: another call took the key over`)
    return token
  }
}
