import { MissingKeyError } from '../core/errors/missing-key.js'
import { hashRequest } from '../core/fingerprint.js'
import { parseKeyHeader } from '../core/key.js'
import { readBody, withRequestBody } from './body.js'
import { pathOf, queryOf, resolveOptions, type IdempotencyContext, type IdempotencyOptions } from './options.js'
import { isHttpProblem, problemResponse } from './problem.js'
import type { IdemError } from '../core/errors/idem-error.js'
import { warn, type HttpOutcome } from '../core/events.js'
import { discard, isDiscarded, type Discarded } from '../core/result.js'
import { bodyBytes, replayResponse, storeResponse, withBody, type StoredLimits, type StoredResponse } from './stored-response.js'

/**
 * The route handler behind the middleware. `request` carries the body (buffered, when
 * the request is protected); `idem` is the held key and its transaction, or
 * `undefined` when the request is not protected (another method or route, or no key
 * where none is required).
 */
export type IdempotencyNext<Tx> = (request: Request, idem: IdempotencyContext<Tx> | undefined) => Promise<Response>

/**
 * The framework-neutral middleware: `(request, next, native?) => response`. `native` is
 * the framework's own request object, passed on to the `scope` option.
 */
export type IdempotencyHandler<Tx, Native = unknown> = (
  request: Request,
  next: IdempotencyNext<Tx>,
  native?: Native,
) => Promise<Response>

/**
 * Makes the Idempotency-Key middleware on Web-standard `Request`/`Response`.
 *
 * A protected request (a method in `methods` on a path in `routes`) must carry a valid
 * `Idempotency-Key`. Its body is buffered (up to `maxBodyBytes`) and fingerprinted with
 * the method and path; then `next` runs inside the engine's transaction, and its
 * response is stored with the effects, all or nothing. A retry gets the stored
 * response back, byte for byte, with `Idempotent-Replayed: true`, without running
 * `next`. 5xx and transient 4xx responses are rolled back, so their retry runs again.
 * Errors of idem become `application/problem+json`; anything `next` throws propagates
 * after the rollback.
 *
 * Options are validated here, at start-up.
 * @throws InvalidOptionError naming the option
 * @see docs/http.md
 *
 * @example
 * const protect = idempotency({ store, scope: (req) => req.headers.get('x-account-id') ?? 'anonymous' })
 * const response = await protect(request, async (req, idem) => {
 *   await idem?.tx.query('INSERT INTO orders (body) VALUES ($1)', [await req.text()])
 *   return Response.json({ ok: true }, { status: 201 })
 * })
 */
export function idempotency<Tx, Native = unknown>(options: IdempotencyOptions<Tx, Native>): IdempotencyHandler<Tx, Native> {
  const { protect } = protectRequests<Tx, Native>(options)
  return function idempotency(request, next, native) {
    return protect(request, native, {
      pass: () => next(request, undefined),
      // The body was read; the route gets a request carrying the same bytes.
      run: (body, idem) => next(request.method === 'GET' || request.method === 'HEAD' ? request : withRequestBody(request, body), idem),
    })
  }
}

/**
 * How an adapter hands a request on once the middleware has decided. The adapters use
 * this directly: each gives the buffered bytes to its framework in the framework's own
 * way, which is much cheaper than building a second Web `Request` around them.
 */
export interface RouteCalls<Tx> {
  /** The request is not protected (another method or route, or no key where none is required): pass it on untouched. */
  pass(): Promise<Response>
  /**
   * Runs the route of a protected request, whose `body` the middleware has read, while
   * `idem` holds the key. Resolve with `discard(response)` to roll back and send
   * `response` unstored (the route threw and the framework answered for it, say).
   */
  run(body: Uint8Array, idem: IdempotencyContext<Tx>): Promise<Response | Discarded<Response>>
  /**
   * True when the adapter writes every answer to the socket itself, reading its body
   * with `bodyBytes` (`sendWebResponse`): replays are then made without a body stream
   * (`streamlessResponse`), which saves most of a Response's cost.
   */
  readonly writesBytes?: boolean
}

/** The middleware behind every front end. */
export interface RequestProtection<Tx, Native> {
  /**
   * False for a method that is never protected (GET, by default): an adapter passes such
   * requests on at once, without converting them to a Web `Request`.
   */
  covers(method: string): boolean
  protect(request: Request, native: Native | undefined, route: RouteCalls<Tx>): Promise<Response>
}

/** How each idem error is counted over HTTP (`HttpEvent`); the rest answer 500 and count as `error`. */
const HTTP_OUTCOMES: Partial<Record<IdemError['code'], HttpOutcome>> = {
  'missing-key': 'missing-key',
  'invalid-key': 'invalid-key',
  'body-too-large': 'body-too-large',
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
  const answer = (error: IdemError, request: Request): Response => {
    const response = problemResponse(error, o.problemTypes)
    if (error.code === 'overran') return overran(response, request)
    if (o.events.listening) o.events.emit({ type: 'http', outcome: HTTP_OUTCOMES[error.code] ?? 'error', method: request.method, status: response.status })
    return response
  }
  // A route held its key past the deadline: the event and the log name it, every time.
  const overran = (response: Response, request: Request): Response => {
    const path = pathOf(request.url)
    if (o.events.listening) o.events.emit({ type: 'http', outcome: 'overran', method: request.method, status: response.status, path })
    warn(o.events, {
      code: 'route-overran',
      source: 'idempotency',
      message:
        `idem: ${request.method} ${path} still ran ${o.deadlineMs} ms after it took its Idempotency-Key (deadlineMs), so its transaction was ` +
        'rolled back (or its lease let go), the key freed and the client answered 503; a route that never answers has lost an error (on Express 4, pass async errors to next(err))',
    })
    return response
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

  return { covers, protect }

  async function protect(request: Request, native: Native | undefined, route: RouteCalls<Tx>): Promise<Response> {
    if (!covers(request.method) || !o.routes(request)) return route.pass()

    let key: string
    try {
      key = parseKeyHeader(request.headers.get('idempotency-key'), o.strict)
    } catch (error) {
      if (error instanceof MissingKeyError && !o.required) {
        if (o.events.listening) o.events.emit({ type: 'http', outcome: 'unprotected', method: request.method })
        return route.pass()
      }
      if (isHttpProblem(error)) return answer(error, request)
      throw error
    }

    try {
      const scope = await o.scope(request, native as Native)
      const body = await readBody(request, o.maxBodyBytes)
      const fingerprint = hashRequest({
        method: request.method,
        route: pathOf(request.url),
        query: queryOf(request.url),
        body,
        contentType: request.headers.get('content-type'),
        fields: o.fields,
      })

      // The handler's own response, kept whole for its caller; only the stored form is trimmed.
      let first: Response | undefined
      const result = await o.idem.run<StoredResponse>(
        { scope, key, fingerprint, waitMs: o.waitMs, deadlineMs: o.deadlineMs, ...(o.ttlMs === undefined ? {} : { ttlMs: o.ttlMs }) },
        async (tx) => {
          const answered = await route.run(body, { tx, key, scope })
          if (isDiscarded(answered)) {
            first = answered.value
            return discard(undefined as unknown as StoredResponse)
          }
          const bytes = await bodyBytes(answered)
          first = withBody(answered, bytes)
          // A 5xx or a transient 4xx rolls back, so its retry runs again.
          if (!o.storeStatus(answered.status)) return discard(storeResponse(answered, bytes, o.replayHeaders))
          const stored = storeResponse(answered, bytes, o.replayHeaders, limits)
          if (stored.omittedBodyBytes !== undefined) warnOmitted(stored.omittedBodyBytes)
          return stored
        },
      )
      // A fresh answer is the route's own: its stored form is never read back.
      const response = result.replayed || first === undefined ? replayResponse(result.value, route.writesBytes === true, o.replayHeaders) : first
      if (o.events.listening) {
        const outcome = result.replayed ? 'replayed' : result.stored ? 'fresh' : 'not-stored'
        o.events.emit({ type: 'http', outcome, method: request.method, status: response.status })
      }
      return response
    } catch (error) {
      if (isHttpProblem(error)) return answer(error, request)
      if (o.events.listening) o.events.emit({ type: 'http', outcome: 'error', method: request.method })
      throw error
    }
  }
}
