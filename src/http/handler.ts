/**
 * The middleware behind every front end: whether a request is protected, its key parsed
 * and its fingerprint taken once, one checked call of the engine, and its outcome turned
 * into an answer in one switch (`decided`). The options are resolved once, at start-up
 * (resolved-options.ts): a request reads plain values. And the Fetch middleware on it.
 */
import { CHECKED_RUN, type CallOutcome, type CheckedRun, type Returned } from '../core/call.js'
import { IdemError } from '../core/errors/idem-error.js'
import { MissingKeyError } from '../core/errors/missing-key.js'
import { OverranError } from '../core/errors/overran.js'
import { checkedScope, type CheckedKey, type CheckedScope } from '../core/identity.js'
import { parseKeyHeader } from '../headers/idempotency-key.js'
import { contentCodings, decodeContent } from './content-coding.js'
import { storeUnavailableLine, type HttpOutcome } from './events.js'
import type { AfterAnswer, HttpRequest, Protected, RouteResult } from './exchange.js'
import type { IdempotencyContext, IdempotencyOptions } from './options.js'
import { problemAnswer } from './problem.js'
import { replayAnswer } from './replay.js'
import { hashRequest } from './request-fingerprint.js'
import { resolveOptions, type ResolvedOptions } from './resolved-options.js'
import { routeNotes, type RouteNotes } from './route-notes.js'
import { storeResponse } from './stored-response.js'
import { webReply, webRequest, webResponse, withRequestBody } from './adapters/web/index.js'

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

/** Makes the middleware behind every front end, with its options validated and resolved once, here. */
export function protectRequests<Tx, Native = unknown>(options: IdempotencyOptions<Tx, Native>): RequestProtection<Tx, Native> {
  return new Protection<Tx, Native>(resolveOptions(options))
}

/** The middleware over resolved options: what it does per request reads plain values and checks nothing. */
class Protection<Tx, Native> implements RequestProtection<Tx, Native> {
  readonly answeredThenFailed: RequestProtection<Tx, Native>['answeredThenFailed']
  readonly #o: ResolvedOptions<Tx, Native>
  readonly #run: CheckedRun<Tx>
  readonly #notes: RouteNotes

  constructor(o: ResolvedOptions<Tx, Native>) {
    this.#o = o
    this.#run = o.idem[CHECKED_RUN]
    this.#notes = routeNotes(o)
    this.answeredThenFailed = this.#notes.answeredThenFailed
  }

  // Arrows, made with the middleware, so that an adapter may take them off it.
  readonly covers = (method: string): boolean => this.#o.methods.has(method)

  readonly protect = async <R>(request: HttpRequest, native: Native, route: RouteCalls<Tx, R>, bounds?: CallBounds): Promise<Protected<R>> => {
    const o = this.#o
    if (!o.methods.has(request.method) || (o.routes !== undefined && !o.routes(native, request.path))) return await passed(route)
    let key: CheckedKey
    try {
      key = parseKeyHeader(request.header('idempotency-key'), o.strict)
    } catch (error) {
      if (!(error instanceof MissingKeyError) || o.required) return this.#answer(error, request, o.deadlineMs)
      if (o.events.listening) o.events.emit({ type: 'http', outcome: 'unprotected', method: request.method })
      return await passed(route)
    }
    const deadlineMs = bounds === undefined ? o.deadlineMs : Math.min(o.deadlineMs, bounds.deadlineMs)
    const waitMs = bounds === undefined ? o.waitMs : Math.max(0, Math.min(o.waitMs, bounds.waitMs))
    if (!(deadlineMs >= 1)) return this.#noTimeLeft(request)
    try {
      const found = this.#scopeFor(native)
      const scope = typeof found === 'string' ? found : await found
      const { body, fingerprint } = await readRequest(request, o)
      const call = { scope, key, fingerprint, ttlMs: o.ttlMs, waitMs, deadlineMs }
      return this.#decided(await this.#run(call, (tx) => this.#runRoute(route, body, { tx, key, scope })), request, deadlineMs)
    } catch (error) {
      if (error instanceof IdemError) return this.#answer(error, request, deadlineMs)
      if (o.events.listening) o.events.emit({ type: 'http', outcome: 'error', method: request.method })
      throw error
    }
  }

  // The scope the key is stored under, checked: the principal's (`scope`), or the shared one.
  #scopeFor(native: Native): CheckedScope | Promise<CheckedScope> {
    const { scope, sharedScope } = this.#o
    if (scope === undefined) return sharedScope
    const given = scope(native)
    return typeof given === 'string' ? checkedScope(given) : Promise.resolve(given).then(checkedScope)
  }

  // The route, run while the key is held: its reply stored (a 5xx or a transient 4xx is
  // not: it rolls back, so its retry runs again), and handed back as the route's own.
  async #runRoute<R>(route: RouteCalls<Tx, R>, body: Uint8Array, idem: IdempotencyContext<Tx>): Promise<Returned<RouteResult<R>>> {
    const o = this.#o
    const reply = await route.run(body, idem)
    if (reply.kind === 'discard' || !o.storeStatus(reply.status)) return { kind: 'discard', value: reply }
    const stored = storeResponse(reply.status, reply.headers(o.replayHeaders), reply.body, { limits: o.limits, form: reply.form, leftOut: this.#notes.leftOut })
    if (stored.omittedBodyBytes !== undefined) this.#notes.omitted(stored.omittedBodyBytes)
    return { kind: 'store', outcome: JSON.stringify(stored), value: reply }
  }

  // The engine's outcome as the answer: a fresh one is the route's own (its stored form
  // is never read back), a replay the stored response, a refusal its problem.
  #decided<R>(outcome: CallOutcome<RouteResult<R>>, request: HttpRequest, deadlineMs: number): Protected<R> {
    const { events, replayHeaders } = this.#o
    switch (outcome.kind) {
      case 'fresh':
      case 'not-stored':
        if (events.listening) events.emit({ type: 'http', outcome: outcome.kind, method: request.method, status: outcome.value.status })
        return { kind: 'route', response: outcome.value.response }
      case 'replayed': {
        const replay = replayAnswer(outcome.value, replayHeaders)
        if (events.listening) events.emit({ type: 'http', outcome: 'replayed', method: request.method, status: replay.status })
        return { kind: 'answer', answer: replay }
      }
      case 'refused':
        return this.#answer(outcome.error, request, deadlineMs)
    }
  }

  // An error of idem's as its problem answer (anything else is thrown on).
  #answer(error: unknown, request: HttpRequest, deadlineMs: number): Protected<never> {
    if (!(error instanceof IdemError)) throw error
    const { events, problemTypes } = this.#o
    const problem = problemAnswer(error, problemTypes)
    if (error.code === 'overran') this.#notes.overran(problem.status, request, deadlineMs)
    else if (error.code === 'store-unavailable') {
      events.fail({ type: 'http', outcome: 'store-unavailable', method: request.method, status: problem.status }, storeUnavailableLine(request.method, request.path, error))
    } else if (events.listening) events.emit({ type: 'http', outcome: OUTCOME_OF_CODE[error.code] ?? 'error', method: request.method, status: problem.status })
    if (error.code === 'route-hijacked') this.#notes.hijacked(error.message)
    return { kind: 'answer', answer: problem }
  }

  // Nothing ran, so nothing overran: the problem, without the route-overran warning.
  #noTimeLeft(request: HttpRequest): Protected<never> {
    const { events, problemTypes } = this.#o
    const problem = problemAnswer(new OverranError('No time was left to take the Idempotency-Key: nothing was claimed; retry'), problemTypes)
    if (events.listening) events.emit({ type: 'http', outcome: 'overran', method: request.method, status: problem.status, path: request.path })
    return { kind: 'answer', answer: problem }
  }
}

const PASSED: Protected<never> = { kind: 'passed' }

async function passed<Tx, R>(route: RouteCalls<Tx, R>): Promise<Protected<R>> {
  await route.pass()
  return PASSED
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
