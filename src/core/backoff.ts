import { InvalidOptionError } from './errors/invalid-option.js'
import { assertDuration, assertKnownOptions, MAX_DURATION_MS, optionNames } from './errors/option-checks.js'

/** Exponential backoff with full jitter: after attempt n, a random whole number of milliseconds in [0, min(maxMs, baseMs·2ⁿ⁻¹)]. */
export interface BackoffOptions {
  /** The ceiling after the first failure; it doubles per attempt. The default is the caller's. */
  baseMs?: number
  /** No wait is longer than this. The default is the caller's. */
  maxMs?: number
}

/** Either backoff options or a function of the attempt number (1 = the first failure) returning milliseconds. */
export type Backoff = BackoffOptions | ((attempt: number) => number)

/** What `backoffDelay` takes beside the option itself. */
export interface BackoffContext {
  /** The option's name in errors: `${caller}: option "${option}.baseMs"`. @default 'backoff' */
  option?: string
  /** The caller's defaults. @default { baseMs: 1000, maxMs: 300000 } */
  defaults?: Required<BackoffOptions>
  /** Returns a number in [0, 1) for the jitter; a value outside is clamped into [0, 1]. @default Math.random */
  random?: () => number
}

/** The first retry's ceiling unless the caller says otherwise: 1 s. */
export const DEFAULT_BACKOFF_BASE_MS = 1_000
/** The longest wait unless the caller says otherwise: 5 minutes. */
export const DEFAULT_BACKOFF_MAX_MS = 300_000

const OPTIONS = optionNames<BackoffOptions>({ baseMs: true, maxMs: true })

/**
 * Builds the delay function once, validating the option (named `option` of `caller` in
 * errors): the waits of the queue's dispatcher and consumer and of the retrying client.
 * Full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter") spreads the
 * retries of many failures that happened together (one dropped load balancer, one
 * restarted server) instead of sending them back in waves.
 * @returns a function of the attempt that failed (counting from 1) to whole milliseconds
 * @throws InvalidOptionError naming the option when it is malformed, or (from the
 *   returned function) when a function option returns no milliseconds
 * @see https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/
 * @example const delay = backoffDelay({ baseMs: 100, maxMs: 10_000 }, 'myWorker'); delay(3) // → 0…400
 */
export function backoffDelay(backoff: Backoff | undefined, caller: string, context: BackoffContext = {}): (attempt: number) => number {
  const { option = 'backoff', defaults = { baseMs: DEFAULT_BACKOFF_BASE_MS, maxMs: DEFAULT_BACKOFF_MAX_MS }, random = Math.random } = context
  if (typeof backoff === 'function') {
    return (attempt) => {
      const ms = backoff(attempt)
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
        throw new InvalidOptionError(`${caller}: option "${option}" returned ${String(ms)} for attempt ${attempt}; return milliseconds ≥ 0`)
      }
      return Math.min(Math.round(ms), MAX_DURATION_MS)
    }
  }
  if (backoff !== undefined && (backoff === null || typeof backoff !== 'object')) {
    throw new InvalidOptionError(`${caller}: option "${option}" must be { baseMs, maxMs } or a function of the attempt number`)
  }
  if (backoff !== undefined) assertKnownOptions(`${caller}: option "${option}"`, backoff, OPTIONS)
  const { baseMs = defaults.baseMs, maxMs = defaults.maxMs } = backoff ?? {}
  assertDuration(`${caller}: option "${option}.baseMs"`, baseMs, 0)
  assertDuration(`${caller}: option "${option}.maxMs"`, maxMs, baseMs)
  return (attempt) => {
    // The exponent is capped so a very late attempt cannot overflow to Infinity (and
    // 0 · Infinity would be NaN when the base is 0).
    const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 52))
    // An injected random outside [0, 1] must not push the delay outside its bounds.
    const draw = random()
    const unit = Number.isFinite(draw) ? Math.min(Math.max(draw, 0), 1) : 0
    return Math.floor(unit * ceiling)
  }
}
