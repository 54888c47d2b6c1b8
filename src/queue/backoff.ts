import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertDuration, assertKnownOptions, MAX_DURATION_MS, optionNames } from '../core/validate.js'

/** Exponential backoff with full jitter: attempt n waits a random time in [0, min(maxMs, baseMs·2ⁿ⁻¹)). */
export interface BackoffOptions {
  /** The first retry's ceiling. @default 1000 */
  baseMs?: number
  /** No retry waits longer than this. @default 300000 (5 minutes) */
  maxMs?: number
}

/** Either backoff options or a function of the attempt number (1 = the first failure) returning milliseconds. */
export type Backoff = BackoffOptions | ((attempt: number) => number)

/** The first retry delay after a failed delivery: 1 s. */
export const DEFAULT_BACKOFF_BASE_MS = 1_000
/** The longest retry delay: 5 minutes. */
export const DEFAULT_BACKOFF_MAX_MS = 300_000


const OPTIONS = optionNames<BackoffOptions>({ baseMs: true, maxMs: true })

/**
 * Builds the delay function once, validating the options (named `option` of `caller` in errors).
 * Full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter") spreads the
 * retries of many failures that happened together, instead of sending them back in
 * waves.
 * @example const delay = backoffDelay({ baseMs: 100, maxMs: 10_000 }, 'createDispatcher'); delay(3) // → 0…399
 */
export function backoffDelay(
  backoff: Backoff | undefined,
  caller: string,
  random: () => number = Math.random,
  option = 'backoff',
): (attempt: number) => number {
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
  const { baseMs = DEFAULT_BACKOFF_BASE_MS, maxMs = DEFAULT_BACKOFF_MAX_MS } = backoff ?? {}
  assertDuration(`${caller}: option "${option}.baseMs"`, baseMs, 0)
  assertDuration(`${caller}: option "${option}.maxMs"`, maxMs, baseMs)
  return (attempt) => {
    const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40))
    return Math.floor(random() * ceiling)
  }
}
