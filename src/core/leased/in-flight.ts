/**
 * The wait of a call that found its key in flight: it claims the key again after a
 * pause, until its `waitMs` is over. Duplicates poll with exponential backoff, jittered
 * so that a crowd of them spreads out.
 */

/** The pause before a call's second claim. */
export const FIRST_POLL_MS = 10
const MAX_POLL_MS = 250

/** The pause after `pause`: twice as long, up to 250 ms. */
export function nextPoll(pause: number): number {
  return Math.min(pause * 2, MAX_POLL_MS)
}

/**
 * Waits before the next claim: half to all of `pause`, at random, never past `deadline`
 * (`performance.now()` when the call's wait is over). Nothing when it is over already:
 * the call then fails as in flight.
 */
export function pollAgain(deadline: number, pause: number): Promise<void> | undefined {
  const left = deadline - performance.now()
  if (left <= 0) return undefined
  return sleep(Math.min(left, pause * (0.5 + Math.random() * 0.5)))
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
