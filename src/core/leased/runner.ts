import { resolveCall, type CallOptions } from '../call.js'
import { decide } from '../decide.js'
import { replayedResult, type RunResult } from '../engine.js'
import { FingerprintMismatchError } from '../errors/fingerprint-mismatch.js'
import { InFlightError } from '../errors/in-flight.js'
import { optionNames } from '../validate.js'
import type { LeasedContext } from './context.js'
import { HeldCall, type LeasedFunction } from './held-call.js'
import { FIRST_POLL_MS, nextPoll, pollAgain } from './in-flight.js'
import { storeFailure } from './store-failure.js'
import type { LeaseClaim } from './store.js'

const RUN_OPTIONS = optionNames<CallOptions>({ scope: true, key: true, fingerprint: true, input: true, ttlMs: true, waitMs: true, deadlineMs: true })

/**
 * Runs the calls of one leased engine, made once by `createLeasedIdem`. A call claims its
 * key, has `decide` say what the claim means, and acts on it: replays the stored
 * outcome, refuses a different request, waits for the call in flight (`in-flight.ts`),
 * or holds the lease and runs the function (`HeldCall`).
 */
export class LeasedRunner {
  readonly #context: LeasedContext

  constructor(context: LeasedContext) {
    this.#context = context
  }

  /** `LeasedIdem.run`. An arrow, made with the runner, so that it works taken off it. */
  readonly run = async <T>(options: CallOptions, fn: LeasedFunction<T>): Promise<RunResult<T>> => {
    const context = this.#context
    const started = performance.now()
    const call = resolveCall(options, context.defaults, RUN_OPTIONS)
    const { scope, key, fingerprint } = call
    const deadline = started + call.waitMs

    // A claim acquired after finding the key running is one whose holder's lease ran out.
    let sawRunning = false
    for (let pause = FIRST_POLL_MS; ; pause = nextPoll(pause)) {
      const claimedAt = performance.now()
      let claim: LeaseClaim
      try {
        claim = await context.io.claim(scope, key, fingerprint, context.leaseMs, call.ttlMs)
      } catch (error) {
        throw context.failed(storeFailure(context.store.name, error), 'error', scope, started)
      }
      const decision = decide(claim, fingerprint)
      switch (decision.kind) {
        case 'run':
          // Steps are only ever resumed after their holder's lease ran out (a failed holder
          // with steps keeps its claim), so resuming them is a takeover too.
          if (sawRunning || decision.claim.steps.size > 0) context.leaseChanged('takeover', scope)
          return await new HeldCall(context, call, decision.claim, started, claimedAt).execute(fn)
        case 'mismatch': {
          const still = decision.running ? ' (that request is still in progress)' : ''
          const error = new FingerprintMismatchError(`Key ${JSON.stringify(key)} was first used with a different request${still}; use a new key for a new request`)
          throw context.failed(error, 'mismatch', scope, started)
        }
        case 'replay': {
          let replay: RunResult<T>
          try {
            replay = replayedResult<T>(decision.record.outcome)
          } catch (error) {
            throw context.failed(error, 'error', scope, started)
          }
          context.report('replayed', scope, started)
          return replay
        }
        case 'in-flight': {
          // Poll until the call's wait is over.
          sawRunning = true
          const polled = pollAgain(deadline, pause)
          if (polled === undefined) {
            const error = new InFlightError(`A call with key ${JSON.stringify(key)} is still in progress (waited ${call.waitMs} ms)`)
            throw context.failed(error, 'in-flight', scope, started)
          }
          await polled
        }
      }
    }
  }
}
