import { assertKnownOptions, optionNames } from '../core/validate.js'

const OPTIONS = optionNames<Parameters<typeof retryDelay>[1]>({ baseDelayMs: true, maxDelayMs: true })

/**
 * The delay before the next attempt: exponential backoff with "full jitter", a uniform
 * pick between 0 and `min(maxDelayMs, baseDelayMs · 2^(attempt−1))`. Full jitter spreads
 * the retries of many clients that failed together (one dropped load balancer, one
 * restarted server) so they do not all come back in the same instant.
 *
 * @param attempt the attempt that just failed, counting from 1
 * @param random a number in [0, 1), usually `Math.random()`; injected so tests can pin it
 * @returns milliseconds, in `[0, min(maxDelayMs, baseDelayMs · 2^(attempt−1))]`
 * @see https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/
 * @example retryDelay(3, { baseDelayMs: 100, maxDelayMs: 10_000 }, 0.5) // → 200
 */
export function retryDelay(attempt: number, ceilings: { baseDelayMs: number; maxDelayMs: number }, random: number): number {
  assertKnownOptions('retryDelay', ceilings, OPTIONS)
  const { baseDelayMs, maxDelayMs } = ceilings
  // The exponent is capped so a very late attempt cannot overflow to Infinity (and
  // 0 · Infinity would be NaN when the base is 0).
  const exponent = Math.min(Math.max(attempt - 1, 0), 52)
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** exponent)
  // An injected random outside [0, 1] must not push the delay outside its bounds.
  const unit = Number.isFinite(random) ? Math.min(Math.max(random, 0), 1) : 0
  return unit * ceiling
}
