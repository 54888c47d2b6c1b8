import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { CallHandler } from '@nestjs/common'
import type { Subscriber, Subscription, TeardownLogic } from 'rxjs'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import type { AfterAnswer, HttpAnswer, HttpBody, HttpRequest, Protected, RouteResult } from '../../exchange.js'
import type { RequestProtection, RouteCalls } from '../../handler.js'
import type { IdempotencyContext } from '../../options.js'
import { problemAnswer } from '../../problem.js'
import { declaresBody, isParsedObject, nodeBody, nodeRequest, parsedBody, refillRequest, type NodeRequestBody } from '../node/request.js'
import { sendAnswer } from '../node/answer.js'
import { answeredStatus, captureResponse, recordHeaders, sendHeld } from '../node/response.js'
import { answerInstead } from './answers.js'

/**
 * The request as Nest hands it to guards and handlers: Express's `req` or Fastify's
 * `request`, with whatever authentication set on it (`req.user`). `scope` and `routes` receive it.
 */
export interface NestRequest {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
  /** What Nest's body parser made of the body. */
  readonly body?: unknown
  /** The body's bytes, with `NestFactory.create(AppModule, { rawBody: true })`. */
  readonly rawBody?: Buffer
  // Authentication and other middleware put their own properties here (user, tenant…).
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly [property: string]: any
}

// The key and transaction of each request while the interceptor holds its key.
export const held = new WeakMap<object, IdempotencyContext<unknown>>()

/** What the interceptor was handed for one request: Nest's request and reply, and Node's underneath. */
export interface NestHttp {
  readonly request: NestRequest
  readonly req: IncomingMessage & { originalUrl?: string }
  readonly res: ServerResponse
  readonly reply: { getHeaders(): Record<string, unknown> }
  readonly next: CallHandler
  /** The route sends its own response (`@Res()`): Nest writes nothing after it. */
  readonly handled: boolean
}

/**
 * One protected request through the interceptor: the route run (or not) under the key,
 * what Nest writes held until the transaction commits, and idem's own answer written in
 * place of Nest's when the route does not run.
 */
export class NestCall {
  private routeStarted = false
  private route: Subscription | undefined
  // The route's Observable has completed or failed; and Nest has written its answer.
  private settled = false
  private answered = false
  private readonly abandon: ReturnType<typeof nothingSentFor>
  // Headers set before the route (CORS, @Header(), a request id) stay on idem's own answers.
  private readonly earlier: readonly string[]

  constructor(
    private readonly protection: RequestProtection<unknown, NestRequest>,
    private readonly http: NestHttp,
    private readonly subscriber: Subscriber<unknown>,
  ) {
    this.earlier = recordHeaders(http.reply.getHeaders())
    this.abandon = nothingSentFor(http.res, () => this.settled && !this.answered)
  }

  start(): TeardownLogic {
    const { request, req, res } = this.http
    let body: NodeRequestBody
    let exchange: HttpRequest
    try {
      const found = requestBody(request, req)
      if (found === undefined) {
        // Something read the body and kept nothing: the fingerprint would miss the payload.
        return answerInstead(this.subscriber, res, problemAnswer(new InvalidOptionError(UNREADABLE_BODY), undefined), this.earlier, this.http.handled)
      }
      body = found
      // A parsed form or JSON body is fingerprinted as JSON, compared canonically.
      const json = typeof body === 'string' && isParsedObject(request.body) ? 'application/json' : undefined
      exchange = nodeRequest(req, req.originalUrl ?? req.url ?? '/', body, json)
    } catch (error) {
      this.subscriber.error(error)
      return
    }
    this.protection.protect(exchange, request, this.calls(body, exchange)).then(
      (outcome) => this.finish(outcome),
      (error: unknown) => {
        // Before the route: Nest's exception filters answer. After it, what Nest wrote
        // for the route is dropped, since the transaction rolled back.
        if (!this.routeStarted) this.subscriber.error(error)
        else sendAnswer(res, INTERNAL_ERROR, false)
      },
    ).catch(() => res.destroy())
    return () => {
      // Nest let go of the route before it answered (its client left): end the held call.
      if (this.routeStarted && !this.settled && !this.answered) this.abandon.leave()
      this.route?.unsubscribe()
    }
  }

  private calls(body: NodeRequestBody, exchange: HttpRequest): RouteCalls<unknown, HttpBody> {
    return {
      pass: async () => {
        this.routeStarted = true
        this.route = this.http.next.handle().subscribe(this.subscriber)
      },
      run: async (bytes, idem) => {
        this.routeStarted = true
        if (typeof body === 'object' && body !== null && 'source' in body) refillRequest(this.http.req, bytes)
        held.set(this.http.request, idem)
        return this.runRoute(exchange)
      },
    }
  }

  /** Runs the route, and resolves with what Nest wrote for it, held. */
  private async runRoute(exchange: HttpRequest): Promise<RouteResult<HttpBody>> {
    const { res } = this.http
    // Once the route has answered, its answer stands: what fails after it is told,
    // and what Nest writes after it (its exception filter's answer) is dropped.
    let threw = false
    let told = false
    const tell = (status: number, after: AfterAnswer): void => {
      if (!told) this.protection.answeredThenFailed(exchange, status, after)
      told = true
    }
    const sent = captureResponse(res, (status, second) => tell(status, { secondAnswer: second })).then((response) => {
      this.answered = true
      return response
    })
    this.route = this.http.next.handle().subscribe({
      next: (value) => this.subscriber.next(value),
      error: (error: unknown) => {
        const status = answeredStatus(res)
        if (status === undefined) threw = true
        else tell(status, { error })
        this.settled = true
        this.subscriber.error(error)
        this.abandon.check()
      },
      complete: () => {
        this.settled = true
        this.subscriber.complete()
        this.abandon.check()
      },
    })
    const reply = await Promise.race([sent, this.abandon.promise])
    // The route threw before it answered: Nest's exception filter has answered, and
    // that answer goes out unstored while the effects and the key roll back.
    return threw && reply.kind === 'reply' ? { kind: 'discard', response: reply.response, status: reply.status } : reply
  }

  private finish(outcome: Protected<HttpBody>): void {
    const { res } = this.http
    if (outcome.kind === 'passed') return
    if (outcome.kind === 'route') sendHeld(res, outcome.response, false)
    else if (this.routeStarted) sendAnswer(res, outcome.answer, false)
    else answerInstead(this.subscriber, res, outcome.answer, this.earlier, this.http.handled)
  }
}

const UNREADABLE_BODY =
  'idempotency (nestjs): the request body was read and kept neither as rawBody nor as body; ' +
  'create the app with NestFactory.create(AppModule, { rawBody: true })'

/**
 * The body to fingerprint, best first: Nest's `rawBody` (the bytes as sent), the Node
 * stream when no parser read it (its bytes are put back for whoever reads it next), or
 * what the parser made of it (parsed objects as JSON, compared canonically). `undefined`
 * when a body was read and nothing of it kept.
 */
function requestBody(request: NestRequest, req: IncomingMessage): NodeRequestBody | undefined {
  if (request.rawBody instanceof Uint8Array) return request.rawBody
  if (!req.readableEnded && !req.readableDidRead) return nodeBody(req)
  const parsed = parsedBody(request.body)
  if (parsed === null && declaresBody(req) && request.body === undefined) return undefined
  return parsed
}

// What goes out when the middleware fails after Nest has written the route's answer (dropped: it rolled back).
const INTERNAL_ERROR: HttpAnswer = { status: 500, headers: ['content-type', 'text/plain; charset=utf-8'], body: 'Internal Server Error' }

/**
 * The call's way out when Nest sends nothing for a route: its client left and Nest let
 * go of the route (Nest 11 drops an Observable route's answer then), or the route
 * settled after its client left and Nest wrote nothing. The held transaction then rolls
 * back instead of staying open; the retry runs the route.
 */
function nothingSentFor(res: ServerResponse, waiting: () => boolean): { promise: Promise<RouteResult<HttpBody>>; check(): void; leave(): void } {
  let resolve!: (value: RouteResult<HttpBody>) => void
  const promise = new Promise<RouteResult<HttpBody>>((r) => (resolve = r))
  let closed = false
  const leave = (): void => resolve({ kind: 'discard', response: '', status: 499 })
  // Nest writes in the turn the route settles in; a macrotask later, nothing is coming.
  const check = (): void => {
    if (closed && waiting()) setImmediate(() => waiting() && leave())
  }
  res.once('close', () => {
    closed = true
    check()
  })
  return { promise, check, leave }
}
