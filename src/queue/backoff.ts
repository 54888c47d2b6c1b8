import { InvalidOptionError } from '../core/errors/invalid-option.js'

/** Exponential backoff with full jitter: attempt n waits a random time in [0, min(maxMs, baseMs·2ⁿ⁻¹)). */
export interface BackoffOptions {
  /** The first retry's ceiling. @default 1000 */
  baseMs?: number
  /** No retry waits longer than this. @default 300000 (5 minutes) */
  maxMs?: number
}

/** Either backoff options or a function of the attempt number (1 = the first failure) returning milliseconds. */
export type Backoff = BackoffOptions | ((attempt: number) => number)

export const DEFAULT_BACKOFF_BASE_MS = 1_000
export const DEFAULT_BACKOFF_MAX_MS = 300_000

// Delays are stored as Postgres integers and passed to timers: keep them below 2³¹.
const MAX_DELAY_MS = 2 ** 31 - 1

/**
 * Builds the delay function once, validating the options (named after `caller`).
 * Full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter") spreads the
 * retries of many failures that happened together, instead of sending them back in
 * waves.
 * @example const delay = backoffDelay({ baseMs: 100, maxMs: 10_000 }, 'createDispatcher'); delay(3) // → 0…399
 */
export function backoffDelay(backoff: Backoff | undefined, caller: string, random: () => number = Math.random): (attempt: number) => number {
  if (typeof backoff === 'function') {
    return (attempt) => {
      const ms = backoff(attempt)
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
        throw new InvalidOptionError(`${caller}: option "backoff" returned ${String(ms)} for attempt ${attempt}; return milliseconds ≥ 0`)
      }
      return Math.min(Math.round(ms), MAX_DELAY_MS)
    }
  }
  if (backoff !== undefined && (backoff === null || typeof backoff !== 'object')) {
    throw new InvalidOptionError(`${caller}: option "backoff" must be { baseMs, maxMs } or a function of the attempt number`)
  }
  const { baseMs = DEFAULT_BACKOFF_BASE_MS, maxMs = DEFAULT_BACKOFF_MAX_MS } = backoff ?? {}
  assertMs(`${caller}: option "backoff.baseMs"`, baseMs, 0)
  assertMs(`${caller}: option "backoff.maxMs"`, maxMs, baseMs)
  return (attempt) => {
    const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40))
    return Math.floor(random() * ceiling)
  }
}

/** Validates a whole number of milliseconds in [min, 2³¹). */
export function assertMs(name: string, value: unknown, min: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_DELAY_MS) {
    throw new InvalidOptionError(`${name} must be a whole number of milliseconds between ${min} and ${MAX_DELAY_MS}, got ${String(value)}`)
  }
}

/** Validates a whole number in [min, max]. */
export function assertCount(name: string, value: unknown, min: number, max = 1_000_000): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidOptionError(`${name} must be a whole number between ${min} and ${max}, got ${String(value)}`)
  }
}

/** Validates a name stored as text (consumer, topic): 1–`max` characters without NUL. */
export function assertName(name: string, value: unknown, max = 200): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max || value.includes('\0')) {
    throw new InvalidOptionError(`${name} must be a string of 1–${max} characters without NUL, got ${JSON.stringify(value) ?? typeof value}`)
  }
}
