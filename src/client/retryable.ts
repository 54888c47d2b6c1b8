import type { IdemErrorCode } from '../core/errors/idem-error.js'
import { DEFAULT_PROBLEM_TYPE_BASE } from '../headers/problem-type.js'
import { isReplayed } from './key.js'
import { readProblem } from './problem.js'

/**
 * The statuses another attempt may answer differently, so the client retries them unless
 * the answer is a replay: 408, 425 and 429 (the transient 4xx, which idem never stores)
 * and 502, 503, 504 (a gateway or the server could not answer this time). A 409 is
 * retried only when it is idem's own in-flight answer (`isInFlight`); every other 4xx is
 * the server's considered answer, and 500 is usually a bug a retry will not fix.
 */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 425, 429, 502, 503, 504])

// idem's answers to "another request holds this key right now": wait, and the first
// request's outcome is replayed (docs/problems.md).
const IN_FLIGHT_CODES: ReadonlySet<string> = new Set<IdemErrorCode>(['in-flight', 'lease-lost'])

/**
 * The problem `type` URIs of idem's in-flight 409s under its default `problemTypes`:
 * `urn:idem:problem#in-flight` and `urn:idem:problem#lease-lost`. The default of the
 * client's `inFlightTypes` option.
 */
export const IN_FLIGHT_PROBLEM_TYPES: readonly string[] = [...IN_FLIGHT_CODES].map((code) => `${DEFAULT_PROBLEM_TYPE_BASE}#${code}`)

/**
 * Whether another attempt with the same key may get another answer. Never for a replay
 * (`Idempotent-Replayed: true`): the server stored that answer and returns it until the
 * key expires, whatever its status. Otherwise a status in `RETRYABLE_STATUSES`, or a 409
 * that says the first request with this key is still running (`isInFlight`).
 */
export function isRetryable(response: Response, body: Uint8Array, inFlightTypes: ReadonlySet<string>): boolean {
  if (isReplayed(response.headers)) return false
  if (response.status === 409) return isInFlight(response, body, inFlightTypes)
  return RETRYABLE_STATUSES.has(response.status)
}

/**
 * A 409 is idem's in-flight answer when its problem's `code` member is `in-flight` or
 * `lease-lost` (idem sends `code` whatever its `problemTypes` option makes of `type`),
 * or its `type` is one of `inFlightTypes` (for a server that is not idem, or a gateway
 * that drops extension members). Any other 409 is the route's own conflict: final.
 */
function isInFlight(response: Response, body: Uint8Array, inFlightTypes: ReadonlySet<string>): boolean {
  const { problem } = readProblem(body, response.headers)
  return (typeof problem.code === 'string' && IN_FLIGHT_CODES.has(problem.code)) || (typeof problem.type === 'string' && inFlightTypes.has(problem.type))
}
