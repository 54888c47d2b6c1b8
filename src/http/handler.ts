import { IdemError } from '../core/errors/idem-error.js'
import { MissingKeyError } from '../core/errors/missing-key.js'
import { OverranError } from '../core/errors/overran.js'
import { warn } from '../core/events.js'
import type { HttpOutcome } from './events.js'
import { hashRequest } from './request-fingerprint.js'
import { parseKeyHeader } from '../headers/idempotency-key.js'
import { discard } from '../core/result.js'
import { withRequestBody } from './body.js'
import { contentCodings, decodeContent } from './content-coding.js'
import type { HttpRequest, Protected, RouteResult } from './exchange.js'
import { resolveOptions, type IdempotencyContext, type IdempotencyOptions, type ResolvedOptions } from './options.js'
import { problemAnswer } from './problem.js'
import { replayAnswer, storeResponse, type StoredLimits, type StoredResponse } from './stored-response.js'
import { webReply, webRequest, webResponse } from './web.js'

const PASSED: Protected<never> = { kind: 'passed' }

/**
 * The route handler behind the Fetch middleware. `request` carries the body (buffered,
 * when the request is protected); `idem` is the held key and its transaction, or
 * `undefined` when the request is not protected (another method or route, or no key
 * where none is required).
 */
export type IdempotencyNext<Tx> = (request: Request, idem: IdempotencyContext<Tx> | undefined) => Promise<Response>

/** The Fetch middleware: `(request, next) => response`. */
export type IdempotencyHandler<Tx> = (request: Request, next: IdempotencyNext<Tx>) => Promise<Response>

/**
 * Makes the Idempotency-Key middleware on Web-standard `Request`/`Response`.
 *
 * A protected request (a method in `methods` on a path in `routes`) must carry a valid
 * `Idempotency-Key`. Its body is buffered (up to `maxBodyBytes`) and fingerprinted with
 * the method and path, decoded if it has a `Content-Encoding` (gzip, deflate, br; `next`
 * still gets it as sent); then `next` runs inside the engine's transaction, and its
 * response is stored with the effects, all or nothing. A retry gets the stored
 * response back, byte for byte, with `Idempotent-Replayed: true`, without running
 * `next`. 5xx and transient 4xx responses are rolled back, so their retry runs again.
 * Errors of idem become `application/problem+json`; anything `next` throws propagates
 * after the rollback. `scope` and `routes` receive the `Request`.
 *
 * Options are validated here, at start-up.
 * @throws InvalidOptionError naming the option
 * @see docs/http.md
 *
 * @example
 * const protect = idempotency({ store, scope: (request) => request.headers.get('x-account-id') ?? 'anonymous' })
 * const response = await protect(request, async (req, idem) => {
 *   await idem?.tx.query('INSERT INTO orders (body) VALUES ($1)', [await req.text()])
 *   return Response.json({ ok: true }, { status: 201 })
 * })
 */
export function idempotency<Tx>(options: IdempotencyOptions<Tx, Request>): IdempotencyHandler<Tx> {
  const { protect } = protectRequests<Tx, Request>(options)
  return async function idempotency(request, next) {
    let passed: Response | undefined
    const outcome = await protect(webRequest(request), request, {
      pass: async () => {
        passed = await next(request, undefined)
      },
      // The body was read; the route gets a request carrying the same bytes.
      run: async (body, idem) => webReply(await next(request.method === 'GET' || request.method === 'HEAD' ? request : withRequestBody(request, body), idem)),
    })
    if (outcome.kind === 'passed') return passed!
    return outcome.kind === 'route' ? outcome.response : webResponse(outcome.answer)
  }
}

/**
 * How an adapter hands a request on once the middleware has decided, each in its
 * framework's own way. `R` is the adapter's own form of the route's reply.
 */
export interface RouteCalls<Tx, R> {
  /** The request is not protected (another method or route, or no key where none is required): pass it on untouched. */
  pass(): Promise<void>
  /**
   * Runs the route of a protected request, whose `body` the middleware has read, while
   * `idem` holds the key; resolves with its reply, or with a discarded one to roll back
   * and send it unstored (the route threw and the framework answered for it, say).
   */
  run(body: Uint8Array, idem: IdempotencyContext<Tx>): Promise<RouteResult<R>>
}

/**
 * Bounds one request's call from outside, over the middleware's own settings: the
 * smaller of each applies. For a front end whose time is given to it per request (a
 * Lambda invocation's remaining time).
 */
export interface CallBounds {
  /** How long the route may hold the key at most. Under 1: no time left, answered 503 `overran` at once, claiming nothing. */
  readonly deadlineMs: number
  /** How long a duplicate may wait for the first request at most. */
  readonly waitMs: number
}

/**
 * What a route did after it answered (on Node, where a route answers by ending its
 * response and runs on): it threw, with the error known (Fastify, NestJS); or something
 * answered a second time, with that answer's status (Express: an error handler, after
 * the route threw or passed an error to `next`).
 */
export type AfterAnswer = { readonly error: unknown } | { readonly secondAnswer: number }

/** The middleware behind every front end. */
export interface RequestProtection<Tx, Native> {
  /**
   * False for a method that is never protected (GET, by default): an adapter passes such
   * requests on at once, without looking further.
   */
  covers(method: string): boolean
  /**
   * Decides on one request: `native` is the framework's own request, for `scope` and
   * `routes`; `bounds` limit this request's call (see `CallBounds`).
   */
  protect<R>(request: HttpRequest, native: Native, route: RouteCalls<Tx, R>, bounds?: CallBounds): Promise<Protected<R>>
  /**
   * Reports a route that failed after it answered with `status`: its answer stands (it
   * is what the client gets and, stored with the effects, what a retry replays), and
   * the failure goes to the warn hook (`route-failed-after-answer`), never into a
   * second answer.
   */
  answeredThenFailed(request: HttpRequest, status: number, after: AfterAnswer): void
}

/** How each idem error is counted over HTTP (`HttpEvent`); the rest answer 500 and count as `error`. */
const OUTCOME_OF_CODE: Partial<Record<IdemError['code'], HttpOutcome>> = {
  'missing-key': 'missing-key',
  'invalid-key': 'invalid-key',
  'body-too-large': 'body-too-large',
  'unsupported-encoding': 'unsupported-encoding',
  'corrupt-body': 'corrupt-body',
  'fingerprint-mismatch': 'mismatch',
  'in-flight': 'in-flight',
  'lease-lost': 'lease-lost',
  overran: 'overran',
  'store-unavailable': 'store-unavailable',
}

/** Makes the middleware behind every front end, with its options validated once, here. */
export function protectRequests<Tx, Native = unknown>(options: IdempotencyOptions<Tx, Native>): RequestProtection<Tx, Native> {
  const o = resolveOptions(options)
  const covers = (method: string): boolean => o.methods.has(method)
  const answer = (error: IdemError, request: HttpRequest, deadlineMs: number): Protected<never> => {
    const problem = problemAnswer(error, o.problemTypes)
    if (error.code === 'overran') overran(problem.status, request, deadlineMs)
    else if (o.events.listening) o.events.emit({ type: 'http', outcome: OUTCOME_OF_CODE[error.code] ?? 'error', method: request.method, status: problem.status })
    // A route that cannot be protected as written: the log names it, every time.
    if (error.code === 'route-hijacked') warn(o.events, { code: 'route-hijacked', source: 'idempotency', message: error.message })
    return { kind: 'answer', answer: problem }
  }
  // A route held its key past the deadline: the event and the log name it, every time.
  const overran = (status: number, request: HttpRequest, deadlineMs: number): void => {
    const { path } = request
    if (o.events.listening) o.events.emit({ type: 'http', outcome: 'overran', method: request.method, status, path })
    warn(o.events, {
      code: 'route-overran',
      source: 'idempotency',
      message:
        `idem: ${request.method} ${path} still ran ${deadlineMs} ms after it took its Idempotency-Key (deadlineMs), so its transaction was ` +
        'rolled back (or its lease let go), the key freed and the client answered 503; a route that never answers has lost an error (on Express 4, pass async errors to next(err))',
    })
  }
  const limits: StoredLimits = { maxBodyBytes: o.maxStoredBodyBytes, maxOutcomeBytes: o.maxOutcomeBytes }
  let omittedBefore = false
  // Once per middleware: every later replay of such a response has an empty body.
  const warnOmitted = (bytes: number): void => {
    if (omittedBefore) return
    omittedBefore = true
    const why =
      bytes > o.maxStoredBodyBytes
        ? `is over maxStoredBodyBytes (${o.maxStoredBodyBytes})`
        : `does not fit beside its headers in what the store holds (${o.maxOutcomeBytes} bytes)`
    warn(o.events, {
      code: 'stored-body-omitted',
      source: 'idempotency',
      message:
        `idem: a response body of ${bytes} bytes ${why}, so it was stored without its body ` +
        'and its replays answer with an empty body and Idempotent-Body-Omitted: true. Raise maxStoredBodyBytes (up to what the store holds) to replay such bodies whole.',
    })
  }
  const leftOutBefore = new Set<string>()
  // Once per field name (only allow-listed names get this far): every later reply with it is stored without it.
  const warnLeftOut = (name: string, reason: string): void => {
    if (leftOutBefore.has(name)) return
    leftOutBefore.add(name)
    warn(o.events, {
      code: 'header-not-stored',
      source: 'idempotency',
      message: `idem: a response's ${JSON.stringify(name)} header was left out of its stored form, as ${reason}: replays of such a response go without it.`,
    })
  }

  return { covers, protect, answeredThenFailed: (request, status, after) => answeredThenFailed(o, request, status, after) }

  async function protect<R>(request: HttpRequest, native: Native, route: RouteCalls<Tx, R>, bounds?: CallBounds): Promise<Protected<R>> {
    if (!covers(request.method) || !o.routes(native, request.path)) {
      await route.pass()
      return PASSED
    }

    let key: string
    try {
      key = parseKeyHeader(request.header('idempotency-key'), o.strict)
    } catch (error) {
      if (error instanceof MissingKeyError && !o.required) {
        if (o.events.listening) o.events.emit({ type: 'http', outcome: 'unprotected', method: request.method })
        await route.pass()
        return PASSED
      }
      if (error instanceof IdemError) return answer(error, request, o.deadlineMs)
      throw error
    }

    const deadlineMs = bounds === undefined ? o.deadlineMs : Math.min(o.deadlineMs, bounds.deadlineMs)
    const waitMs = bounds === undefined ? o.waitMs : Math.max(0, Math.min(o.waitMs, bounds.waitMs))
    if (deadlineMs < 1) {
      // Nothing ran, so nothing overran: the problem, without the route-overran warning.
      const problem = problemAnswer(new OverranError('No time was left to take the Idempotency-Key: nothing was claimed; retry'), o.problemTypes)
      if (o.events.listening) o.events.emit({ type: 'http', outcome: 'overran', method: request.method, status: problem.status, path: request.path })
      return { kind: 'answer', answer: problem }
    }

    try {
      const scope = await o.scope(native)
      const { body, fingerprint } = await readRequest(request, o)

      // The route's own reply, sent as it is; only its stored form is trimmed. Null is
      // what a discarded reply leaves to store: nothing.
      let first: RouteResult<R> | undefined
      const result = await o.idem.run<StoredResponse | null>(
        { scope, key, fingerprint, waitMs, deadlineMs, ...(o.ttlMs === undefined ? {} : { ttlMs: o.ttlMs }) },
        async (tx) => {
          const reply = await route.run(body, { tx, key, scope })
          first = reply
          // A 5xx or a transient 4xx rolls back, so its retry runs again.
          if (reply.kind === 'discard' || !o.storeStatus(reply.status)) return discard(null)
          const stored = storeResponse(reply.status, reply.headers(o.replayHeaders), reply.body, { limits, form: reply.form, leftOut: warnLeftOut })
          if (stored.omittedBodyBytes !== undefined) warnOmitted(stored.omittedBodyBytes)
          return stored
        },
      )
      // A fresh answer is the route's own: its stored form is never read back.
      const decided: Protected<R> =
        !result.replayed && first !== undefined ? { kind: 'route', response: first.response } : { kind: 'answer', answer: replayAnswer(result.value, o.replayHeaders) }
      if (o.events.listening) {
        const outcome = result.replayed ? 'replayed' : result.stored ? 'fresh' : 'not-stored'
        const status = decided.kind === 'answer' ? decided.answer.status : first!.status
        o.events.emit({ type: 'http', outcome, method: request.method, status })
      }
      return decided
    } catch (error) {
      if (error instanceof IdemError) return answer(error, request, deadlineMs)
      if (o.events.listening) o.events.emit({ type: 'http', outcome: 'error', method: request.method })
      throw error
    }
  }
}

// The route's answer stands; what failed after it is told, with the error when it is known.
function answeredThenFailed<Tx, Native>(o: ResolvedOptions<Tx, Native>, request: HttpRequest, status: number, after: AfterAnswer): void {
  const what =
    'error' in after
      ? `then threw (${after.error instanceof Error ? after.error.message : String(after.error)})`
      : `then something answered again with ${after.secondAnswer} (an error handler after the route failed, or a second send)`
  const replay = o.storeStatus(status) ? 'stored with its effects, what a retry with the same key replays' : 'not stored (it rolls back), so a retry runs the route again'
  warn(o.events, {
    code: 'route-failed-after-answer',
    source: 'idempotency',
    message:
      `idem: ${request.method} ${request.path} answered ${status}, ${what}. Its ${status} stands: it is what the client gets and, ${replay}; ` +
      'no second answer was sent. Finish what can fail before answering, or catch it.',
    ...('error' in after ? { cause: after.error } : {}),
  })
}

/**
 * A protected request's body, as sent (what the route gets), and its fingerprint, taken
 * over the body with its content codings undone (docs/http.md). The codings are checked
 * before the body is read, so one idem cannot decode is refused without reading it; a
 * request without `Content-Encoding` costs one header lookup more than before.
 */
async function readRequest<Tx, Native>(request: HttpRequest, o: ResolvedOptions<Tx, Native>): Promise<{ body: Uint8Array; fingerprint: string }> {
  const encoding = request.header('content-encoding')
  const codings = encoding === null ? undefined : contentCodings(encoding)
  const body = await request.body(o.maxBodyBytes)
  const fingerprint = hashRequest({
    method: request.method,
    route: request.path,
    query: request.query,
    body: codings === undefined ? body : await decodeContent(body, codings, o.maxBodyBytes),
    contentType: request.header('content-type'),
    fields: o.fields,
  })
  return { body, fingerprint }
}
