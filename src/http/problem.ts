import { IdemError } from '../core/errors/idem-error.js'

/** The media type of every error idem answers with (RFC 9457). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

/** What a problem response is built from. */
export type HttpProblem = IdemError

/** True for the errors the HTTP front end answers itself; anything else propagates. */
export function isHttpProblem(error: unknown): error is HttpProblem {
  return error instanceof IdemError
}

/**
 * The RFC 9457 `application/problem+json` response for an idem error: the error's
 * `status`, `type` (a link to docs/problems.md#<code>), `title` and `code`, its message
 * as `detail`, and `Retry-After` when the error says when to retry (409, 503).
 *
 * This is the one place an error becomes a response.
 *
 * @example problemResponse(new MissingKeyError('The Idempotency-Key header is missing')) // 400
 */
export function problemResponse(error: HttpProblem): Response {
  const headers = new Headers({ 'content-type': PROBLEM_CONTENT_TYPE })
  if (error.retryAfterSeconds !== undefined) headers.set('retry-after', String(error.retryAfterSeconds))
  const body = JSON.stringify({
    type: error.type,
    title: error.title,
    status: error.status,
    detail: error.message,
    code: error.code,
  })
  return new Response(body, { status: error.status, headers })
}
