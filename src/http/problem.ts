import type { IdemError, IdemErrorCode } from '../core/errors/idem-error.js'
import { assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import { DEFAULT_PROBLEM_TYPE_BASE } from '../headers/problem-type.js'
import type { BodyTooLargeError } from './body-too-large.js'
import type { CorruptBodyError } from './corrupt-body.js'
import type { HttpAnswer } from './exchange.js'
import type { RouteHijackedError } from './adapters/node/route-hijacked.js'
import { DECODED_CODINGS, type UnsupportedEncodingError } from './unsupported-encoding.js'
import { webResponse } from './adapters/web/index.js'

/** The media type of every error idem answers with (RFC 9457). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

export { DEFAULT_PROBLEM_TYPE_BASE } from '../headers/problem-type.js'

/** Every problem idem answers with over HTTP: its errors' codes (the HTTP front end's own among them), and the webhook receiver's own. */
export type ProblemCode =
  | IdemErrorCode
  | BodyTooLargeError['code']
  | UnsupportedEncodingError['code']
  | CorruptBodyError['code']
  | RouteHijackedError['code']
  | 'method-not-allowed'
  | 'invalid-signature'
  | 'handler-failed'

/** What one problem type means over HTTP. */
export interface ProblemSpec {
  readonly status: number
  /** A short, stable summary of the problem type (RFC 9457 `title`). */
  readonly title: string
  /**
   * What a client is told as `detail`, for problems whose message may name
   * infrastructure (hosts, ports, driver messages): the message then goes only to the
   * event stream and logs. Without it, the error's own message is the detail.
   */
  readonly detail?: string
  /** Header fields every answer of this problem carries, as a flat list of names (lower case) and values. */
  readonly headers?: readonly string[]
}

/** The one table from a code to its HTTP meaning. */
export const PROBLEMS: Readonly<Record<ProblemCode, ProblemSpec>> = {
  'missing-key': { status: 400, title: 'Idempotency-Key is required' },
  'invalid-key': { status: 400, title: 'Idempotency-Key is malformed' },
  'body-too-large': { status: 413, title: 'Request body too large' },
  // The codings that would do, so a client can tell a coding from a media type it got wrong.
  'unsupported-encoding': { status: 415, title: 'Content-Encoding not supported', headers: ['accept-encoding', DECODED_CODINGS] },
  'corrupt-body': { status: 400, title: 'Request body does not decode as its Content-Encoding says' },
  'fingerprint-mismatch': { status: 422, title: 'Idempotency-Key reused with a different request' },
  'in-flight': { status: 409, title: 'A request with this Idempotency-Key is in progress' },
  'lease-lost': { status: 409, title: 'Another request took over this Idempotency-Key' },
  overran: {
    status: 503,
    title: 'Request overran its time limit',
    detail:
      'The request was still being processed when its time limit passed, so the server gave up on it and stored nothing for this key. Retry with the same key after Retry-After.',
  },
  'store-unavailable': {
    status: 503,
    title: 'Idempotency store unavailable',
    // Not "nothing was run": the store can fail after the route ran (storing its answer).
    detail: 'The idempotency store is unavailable right now. Retry with the same key after Retry-After: idem never runs a request unprotected.',
  },
  'migration-required': {
    status: 500,
    title: 'Idempotency tables are missing',
    detail: 'The idempotency store is not set up on this server. Retry with the same key once it is.',
  },
  'outcome-not-serializable': {
    status: 500,
    title: 'Outcome cannot be stored',
    detail: 'The outcome could not be stored, so it was rolled back; a retry runs again.',
  },
  'outcome-too-large': {
    status: 500,
    title: 'Outcome too large to store',
    detail: 'The outcome of this request is larger than the idempotency store can hold, so it was not stored; a retry with the same key gets this answer again.',
  },
  'outcome-unreadable': {
    status: 500,
    title: 'Stored outcome cannot be read',
    detail: 'The stored outcome of this Idempotency-Key cannot be read back, so nothing was replayed and nothing was run again.',
  },
  'invalid-option': { status: 500, title: 'Invalid idem configuration', detail: 'The idempotency middleware on this server is misconfigured.' },
  'route-hijacked': {
    status: 500,
    title: 'Route hijacked its reply',
    detail:
      'The route for this request took its reply over (hijacked it), so the idempotency middleware could neither hold nor store it: its work was rolled back and nothing was stored. A retry with the same key gets this answer again until the server is fixed.',
  },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'invalid-signature': { status: 401, title: 'Webhook signature does not verify' },
  'handler-failed': { status: 500, title: 'Handling the event failed' },
}

/**
 * Where `type` URIs point: a base URI (`https://docs.example.com/errors` gives
 * `…/errors#in-flight`), or a function of the code, so a team can link its own API docs.
 * @default DEFAULT_PROBLEM_TYPE_BASE
 */
export type ProblemTypes = string | ((code: ProblemCode) => string)

/**
 * The RFC 9457 `type` URI of a problem code.
 * @example
 * problemType('in-flight', 'https://docs.example.com/errors') // 'https://docs.example.com/errors#in-flight'
 */
export function problemType(code: ProblemCode, types: ProblemTypes = DEFAULT_PROBLEM_TYPE_BASE): string {
  return typeof types === 'function' ? types(code) : `${types}#${code}`
}

/**
 * The HTTP status an idem error is answered with.
 * @example
 * problemStatus(new InFlightError('held')) // 409
 */
export function problemStatus(error: IdemError): number {
  return PROBLEMS[error.code].status
}

/**
 * The RFC 9457 `application/problem+json` response for an idem error: `type`, `title`,
 * `status` and `code` from the one table, a `detail` a client may read (never a host,
 * port or driver message), and `Retry-After` when the error says when to retry (409,
 * 503).
 *
 * This, `problem` and the middleware's own `problemAnswer` are the only places an error
 * becomes an answer. Every `IdemError` has a problem; anything else should propagate.
 *
 * @example problemResponse(new MissingKeyError('The Idempotency-Key header is missing')) // 400
 * @example
 * try {
 *   return await handle(request)
 * } catch (error) {
 *   if (error instanceof IdemError) return problemResponse(error)
 *   throw error
 * }
 */
export function problemResponse(error: IdemError, types?: ProblemTypes): Response {
  return webResponse(problemAnswer(error, types))
}

/** `problemResponse` as the middleware's own answer, for every adapter. */
export function problemAnswer(error: IdemError, types: ProblemTypes | undefined): HttpAnswer {
  const spec = PROBLEMS[error.code]
  return answerOf(error.code, spec.detail ?? error.message, types, error.retryAfterSeconds, [])
}

const PROBLEM_OPTIONS = optionNames<NonNullable<Parameters<typeof problem>[2]>>({ types: true, retryAfterSeconds: true, headers: true })

/** What `problem` and `problemCodeAnswer` take besides the code and detail. */
export interface ProblemExtras {
  types?: ProblemTypes | undefined
  retryAfterSeconds?: number | undefined
  /** Header fields to add (not Content-Type or Retry-After, which are the problem's own). */
  headers?: Record<string, string>
}

/**
 * A problem response from a code: for answers that are not an idem error (the webhook
 * receiver's 401 and 405, say).
 * @example problem('method-not-allowed', 'Webhooks are delivered with POST', { headers: { allow: 'POST' } })
 */
export function problem(code: ProblemCode, detail: string, options: ProblemExtras = {}): Response {
  assertKnownOptions('problem', options, PROBLEM_OPTIONS)
  return webResponse(problemCodeAnswer(code, detail, options))
}

/**
 * `problem` as an answer on the exchange, for every adapter; `members` are extension
 * members of the problem object (RFC 9457 §3.2), such as the webhook receiver's `check`.
 */
export function problemCodeAnswer(code: ProblemCode, detail: string, options: ProblemExtras & { members?: Record<string, string> | undefined } = {}): HttpAnswer {
  const { types, retryAfterSeconds, headers = {}, members } = options
  const extra: string[] = []
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase()
    if (lower !== 'content-type' && lower !== 'retry-after') extra.push(lower, value)
  }
  return answerOf(code, detail, types, retryAfterSeconds, extra, members)
}

function answerOf(code: ProblemCode, detail: string, types: ProblemTypes | undefined, retryAfterSeconds: number | undefined, extra: string[], members?: Record<string, string>): HttpAnswer {
  const spec = PROBLEMS[code]
  const headers = [...extra, ...(spec.headers ?? []), 'content-type', PROBLEM_CONTENT_TYPE]
  if (retryAfterSeconds !== undefined) headers.push('retry-after', String(retryAfterSeconds))
  const body = JSON.stringify({ type: problemType(code, types), title: spec.title, status: spec.status, detail, code, ...members })
  return { status: spec.status, headers, body }
}
