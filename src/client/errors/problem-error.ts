import { IdemClientError, type ClientErrorDetails } from './client-error.js'

/** An RFC 9457 problem details object, as far as the client reads it. */
export interface ProblemDetails {
  type?: string
  title?: string
  status?: number
  detail?: string
  instance?: string
  /** idem's stable error code (`fingerprint-mismatch`, `missing-key`, …). */
  code?: string
  [extension: string]: unknown
}

/** What a `ProblemError` carries: the response status and its RFC 9457 problem fields. */
export interface ProblemErrorDetails extends ClientErrorDetails {
  status: number
  headers: Headers
  /** The parsed problem+json (or JSON) body; `{}` when the body was something else. */
  problem: ProblemDetails
  /** The raw body text, for bodies that were not JSON. */
  body: string
  /**
   * True when the answer is one the client retries (a transient status, or idem's
   * in-flight 409) and it stopped only for lack of attempts or time. False for every
   * other answer, and always for a replay: a stored answer is the same on every retry.
   */
  retryable: boolean
  replayed: boolean
}

/**
 * The server's final answer was not a success: one the client never retries (400 bad
 * key, 422 key reused with another body, a route's own 409, any replayed answer, …:
 * `retryable: false`), or a retryable one (429, 503, idem's in-flight 409, …) that was
 * still the answer when the attempts or the deadline ran out (`retryable: true`). The
 * RFC 9457 fields are lifted onto the error.
 *
 * @example
 * try { await client.fetch(url, init) } catch (error) {
 *   if (error instanceof ProblemError && error.code === 'fingerprint-mismatch') showBug(error.detail)
 * }
 */
export class ProblemError extends IdemClientError {
  override readonly name = 'ProblemError'
  readonly status: number
  /** The problem type URI; `about:blank` when the server sent none (RFC 9457 §4.2.1). */
  readonly type: string
  readonly title: string | undefined
  readonly detail: string | undefined
  readonly instance: string | undefined
  /** A stable error code: the problem's `code` member, else the fragment of its `type` URI. */
  readonly code: string | undefined
  readonly problem: ProblemDetails
  readonly body: string
  readonly headers: Headers
  readonly retryable: boolean
  readonly replayed: boolean

  constructor(details: ProblemErrorDetails) {
    const { status, problem } = details
    const title = str(problem.title)
    const detail = str(problem.detail)
    super(`HTTP ${status}${title ? ` ${title}` : ''}${detail ? `: ${detail}` : ''} (after ${details.attempts} attempt${details.attempts === 1 ? '' : 's'})`, details)
    this.status = status
    this.type = str(problem.type) ?? 'about:blank'
    this.title = title
    this.detail = detail
    this.instance = str(problem.instance)
    this.code = str(problem.code) ?? fragment(this.type)
    this.problem = problem
    this.body = details.body
    this.headers = details.headers
    this.retryable = details.retryable
    this.replayed = details.replayed
  }
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined
}

function fragment(type: string): string | undefined {
  const at = type.indexOf('#')
  return at >= 0 && at < type.length - 1 ? type.slice(at + 1) : undefined
}
