import type { Context } from 'aws-lambda'
import { OverranError } from '../core/errors/overran.js'

/**
 * 1 second: how much of an invocation idem keeps back from the function, by default.
 * At the deadline idem needs time of its own before Lambda stops the invocation: to roll
 * the transaction back (closing its connection) or release the lease (one store round
 * trip), and to return the error, so that the key is free for the retry rather than held
 * by a frozen sandbox.
 */
export const DEFAULT_MARGIN_MS = 1_000

/**
 * How long work that starts now may hold a key within this invocation: the time Lambda
 * still gives it (`context.getRemainingTimeInMillis()`) less `marginMs`, never more than
 * `limitMs`. Without that clock (the handler called outside Lambda, in a unit test
 * without a context) the limit alone.
 * @throws OverranError when less than a millisecond is left: nothing was claimed, so the retry starts afresh
 */
export function timeLeft(context: Pick<Context, 'getRemainingTimeInMillis'> | undefined, marginMs: number, limitMs: number | undefined, caller: string): number | undefined {
  const left = remainingMs(context, marginMs)
  if (left === undefined) return limitMs
  if (left < 1) {
    const remaining = left + marginMs
    throw new OverranError(
      `${caller}: the invocation has ${remaining} ms left, no more than the ${marginMs} ms kept back to let go of a key (marginMs): nothing was claimed; the retry runs it`,
    )
  }
  return limitMs === undefined ? left : Math.min(left, limitMs)
}

/**
 * The invocation's remaining time less `marginMs`, whole milliseconds, possibly 0 or less;
 * undefined without Lambda's clock.
 */
export function remainingMs(context: Pick<Context, 'getRemainingTimeInMillis'> | undefined, marginMs: number): number | undefined {
  return typeof context?.getRemainingTimeInMillis === 'function' ? Math.floor(context.getRemainingTimeInMillis()) - marginMs : undefined
}
