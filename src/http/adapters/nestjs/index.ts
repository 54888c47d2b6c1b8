/**
 * `idem/nestjs`: the Idempotency-Key interceptor for NestJS 10 and 11, on the Express
 * and the Fastify platform. It maps Node's request and response, which both platforms
 * end in, to the middleware's exchange (`node.ts`); the middleware holds all the behaviour.
 *
 * An interceptor rather than a middleware: Nest runs interceptors after its guards, so
 * `scope` can read the principal that authentication put on the request (`req.user`),
 * and users bind it where Nest binds behaviour (a route, a controller, the app). It
 * works underneath Nest's response handling, on the Node response both platforms end
 * in: whatever Nest writes for the route (the handler's value serialised, an exception
 * filter's answer, a `@Res()` handler's own writes) is held until the transaction
 * commits, and a replay or a problem is written in place of what Nest writes.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import {
  createParamDecorator,
  Inject,
  type CallHandler,
  type DynamicModule,
  type ExecutionContext,
  type InjectionToken,
  type ModuleMetadata,
  type NestInterceptor,
  type OptionalFactoryDependency,
  type Provider,
} from '@nestjs/common'
import { Observable, type Subscription } from 'rxjs'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../../../core/validate.js'
import type { AfterAnswer, HttpAnswer, HttpBody, HttpRequest, RouteResult } from '../../exchange.js'
import { protectRequests, type RequestProtection, type RouteCalls } from '../../handler.js'
import { declaresBody, isParsedObject, nodeBody, nodeRequest, parsedBody, refillRequest, type NodeRequestBody } from '../node/request.js'
import { answeredStatus, captureResponse, recordHeaders, sendAnswer, sendHeld } from '../node/response.js'
import type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
import { problemAnswer } from '../../problem.js'
import { webhookReceiving, type WebhookReceiverOptions } from '../../webhooks/receiver.js'
import { keptRawBody, nodeDelivery, sendToReply, sendToResponse, type ReplyLike } from '../../webhooks/node.js'

export type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
export type { WebhookEvent, WebhookEventId, WebhookReceiverOptions, WebhookVerify } from '../../webhooks/receiver.js'

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

/** The options of `IdempotencyModule.forRoot` and `IdempotencyInterceptor`: those of every adapter, with `scope` given Nest's request. */
export type NestIdempotencyOptions<Tx = unknown> = IdempotencyOptions<Tx, NestRequest>

/** The injection token of the middleware `IdempotencyModule` builds, once, from its options. */
export const IDEMPOTENCY_PROTECTION: InjectionToken = 'idem:IdempotencyProtection'

/**
 * The middleware made from the options, shared by every interceptor the module hands
 * out. `IdempotencyModule` provides it; make one yourself only to share one handler
 * between interceptors built by hand.
 * @example
 * const protection = new IdempotencyProtection({ store, scope: (req) => req.user.accountId })
 * const interceptor = new IdempotencyInterceptor(protection)
 */
export class IdempotencyProtection {
  /** @internal */
  readonly protection: RequestProtection<unknown, NestRequest>
  constructor(options: NestIdempotencyOptions<unknown>) {
    this.protection = protectRequests<unknown, NestRequest>(options)
  }
}

// The key and transaction of each request while the interceptor holds its key.
const held = new WeakMap<object, IdempotencyContext<unknown>>()

/**
 * The interceptor. Bind it with `@UseInterceptors(IdempotencyInterceptor)` on the
 * controllers or routes it protects (with `IdempotencyModule.forRoot` imported once), or
 * for the whole app with `{ provide: APP_INTERCEPTOR, useExisting: IdempotencyInterceptor }`;
 * or make one without the module: `@UseInterceptors(new IdempotencyInterceptor({ store, scope }))`.
 * The route reads the transaction with `@IdempotencyTx()` (or the whole context with
 * `@Idem()`) and writes its effects through it; the answer Nest writes for the route is
 * stored with them, in the same transaction.
 *
 * Options are validated when it is made.
 * @throws InvalidOptionError naming the option
 *
 * @example
 * \@Controller('orders')
 * \@UseInterceptors(IdempotencyInterceptor)
 * export class OrdersController {
 *   \@Post()
 *   async create(@Body() order: NewOrder, @IdempotencyTx() tx: PgClient) {
 *     const { rows } = await tx.query('INSERT INTO orders (body) VALUES ($1) RETURNING id', [order])
 *     return { id: rows[0].id }
 *   }
 * }
 */
export class IdempotencyInterceptor<Tx = unknown> implements NestInterceptor {
  private readonly protection: RequestProtection<unknown, NestRequest>

  constructor(options: IdempotencyProtection | NestIdempotencyOptions<Tx>) {
    this.protection = (options instanceof IdempotencyProtection ? options : new IdempotencyProtection(options as NestIdempotencyOptions<unknown>)).protection
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle()
    const http = context.switchToHttp()
    const request = http.getRequest<NestRequest>()
    const reply = http.getResponse<{ raw?: ServerResponse; getHeaders(): Record<string, unknown> }>()
    // Fastify's request and reply wrap Node's; Express's are Node's.
    const req = (request.raw ?? request) as IncomingMessage & { originalUrl?: string }
    const res = (reply.raw ?? reply) as ServerResponse
    if (!this.protection.covers(req.method ?? 'GET')) return next.handle()
    const handled = sendsOwnResponse(context)
    return new Observable<unknown>((subscriber) => {
      // Headers set before the route (CORS, @Header(), a request id) stay on idem's own answers.
      const earlier = recordHeaders(reply.getHeaders())
      let routeStarted = false
      let route: Subscription | undefined
      // The route's Observable has completed or failed; and Nest has written its answer.
      let settled = false
      let answered = false
      const abandon = nothingSentFor(res, () => settled && !answered)

      let body: NodeRequestBody
      let exchange: HttpRequest
      try {
        const found = requestBody(request, req)
        if (found === undefined) {
          // Something read the body and kept nothing: the fingerprint would miss the payload.
          return answerInstead(subscriber, res, problemAnswer(new InvalidOptionError(UNREADABLE_BODY), undefined), earlier, handled)
        }
        body = found
        // A parsed form or JSON body is fingerprinted as JSON, compared canonically.
        const json = typeof body === 'string' && isParsedObject(request.body) ? 'application/json' : undefined
        exchange = nodeRequest(req, req.originalUrl ?? req.url ?? '/', body, json)
      } catch (error) {
        subscriber.error(error)
        return
      }

      const calls: RouteCalls<unknown, HttpBody> = {
        pass: async () => {
          routeStarted = true
          route = next.handle().subscribe(subscriber)
        },
        run: async (bytes, idem) => {
          routeStarted = true
          if (typeof body === 'object' && body !== null && 'source' in body) refillRequest(req, bytes)
          held.set(request, idem)
          // Once the route has answered, its answer stands: what fails after it is told,
          // and what Nest writes after it (its exception filter's answer) is dropped.
          let threw = false
          let told = false
          const tell = (status: number, after: AfterAnswer): void => {
            if (!told) this.protection.answeredThenFailed(exchange, status, after)
            told = true
          }
          const sent = captureResponse(res, (status, second) => tell(status, { secondAnswer: second })).then((response) => {
            answered = true
            return response
          })
          route = next.handle().subscribe({
            next: (value) => subscriber.next(value),
            error: (error: unknown) => {
              const status = answeredStatus(res)
              if (status === undefined) threw = true
              else tell(status, { error })
              settled = true
              subscriber.error(error)
              abandon.check()
            },
            complete: () => {
              settled = true
              subscriber.complete()
              abandon.check()
            },
          })
          const reply = await Promise.race([sent, abandon.promise])
          // The route threw before it answered: Nest's exception filter has answered, and
          // that answer goes out unstored while the effects and the key roll back.
          return threw && reply.kind === 'reply' ? { kind: 'discard', response: reply.response, status: reply.status } : reply
        },
      }

      this.protection.protect(exchange, request, calls).then(
        (outcome) => {
          if (outcome.kind === 'passed') return
          if (outcome.kind === 'route') sendHeld(res, outcome.response, false)
          else if (routeStarted) sendAnswer(res, outcome.answer, false)
          else answerInstead(subscriber, res, outcome.answer, earlier, handled)
        },
        (error: unknown) => {
          // Before the route: Nest's exception filters answer. After it, what Nest wrote
          // for the route is dropped, since the transaction rolled back.
          if (!routeStarted) subscriber.error(error)
          else sendAnswer(res, INTERNAL_ERROR, false)
        },
      ).catch(() => res.destroy())

      return () => {
        // Nest let go of the route before it answered (its client left): end the held call.
        if (routeStarted && !settled && !answered) abandon.leave()
        route?.unsubscribe()
      }
    })
  }
}

/**
 * The transaction of the request's key, as a route parameter: write the route's effects
 * through it. `undefined` when the interceptor does not protect the request.
 * @example
 * class OrdersController {
 *   \@Post() create(@Body() order: NewOrder, @IdempotencyTx() tx: PgClient) {
 *     return tx.query('INSERT INTO orders (body) VALUES ($1)', [order])
 *   }
 * }
 */
export const IdempotencyTx: () => ParameterDecorator = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  return held.get(context.switchToHttp().getRequest<object>())?.tx
})

/**
 * The key, scope and transaction of the request (`{ key, scope, tx }`), as a route
 * parameter; `undefined` when the interceptor does not protect the request.
 * @example
 * class OrdersController {
 *   \@Post() create(@Idem() idem: IdempotencyContext<PgClient> | undefined) {
 *     return { key: idem?.key }
 *   }
 * }
 */
export const Idem: () => ParameterDecorator = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  return held.get(context.switchToHttp().getRequest<object>())
})

/**
 * The key, scope and transaction held for a request (Nest's request object, as
 * `@Req()` gives it), for code that has the request but no route parameters.
 * @example
 * const tx = idempotencyContext<PgClient>(req)?.tx
 */
export function idempotencyContext<Tx = unknown>(request: object): IdempotencyContext<Tx> | undefined {
  return held.get(request) as IdempotencyContext<Tx> | undefined
}

/** `IdempotencyModule.forRootAsync`: options made by a factory with injected providers (a ConfigService, the app's pool). */
export interface IdempotencyModuleAsyncOptions<Tx = unknown> extends Pick<ModuleMetadata, 'imports'> {
  /** Makes the options from the providers named in `inject`, in that order. */
  useFactory: (...args: never[]) => NestIdempotencyOptions<Tx> | Promise<NestIdempotencyOptions<Tx>>
  inject?: Array<InjectionToken | OptionalFactoryDependency>
}

const ASYNC_OPTIONS = optionNames<IdempotencyModuleAsyncOptions>({ useFactory: true, inject: true, imports: true })

/**
 * Makes the middleware once, from its options, and provides `IdempotencyInterceptor`
 * to every module (it is global: import it once, in the root module).
 *
 * @example
 * \@Module({
 *   imports: [IdempotencyModule.forRoot({ store, scope: (req) => req.user.accountId })],
 *   controllers: [OrdersController],
 * })
 * export class AppModule {}
 */
export class IdempotencyModule {
  /** The module with options known now. */
  static forRoot<Tx>(options: NestIdempotencyOptions<Tx>): DynamicModule {
    const protection = new IdempotencyProtection(options as NestIdempotencyOptions<unknown>)
    return moduleWith({ provide: IDEMPOTENCY_PROTECTION, useValue: protection })
  }

  /** The module with options made by a factory of injected providers, once they exist. */
  static forRootAsync<Tx>(options: IdempotencyModuleAsyncOptions<Tx>): DynamicModule {
    assertKnownOptions('IdempotencyModule.forRootAsync', options, ASYNC_OPTIONS)
    const { useFactory, inject = [], imports = [] } = options
    const module = moduleWith({
      provide: IDEMPOTENCY_PROTECTION,
      inject,
      useFactory: async (...args: never[]) => new IdempotencyProtection((await useFactory(...args)) as NestIdempotencyOptions<unknown>),
    })
    return { ...module, imports }
  }
}

function moduleWith(protection: Provider): DynamicModule {
  return {
    module: IdempotencyModule,
    global: true,
    providers: [protection, IdempotencyInterceptor],
    exports: [IDEMPOTENCY_PROTECTION, IdempotencyInterceptor],
  }
}

// Nest makes the interceptor with the module's middleware (no decorator syntax here:
// the library is compiled without TypeScript's experimental decorators).
Inject(IDEMPOTENCY_PROTECTION)(IdempotencyInterceptor, undefined, 0)

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

// Nest's own test for a handler that sends its response itself, so that Nest writes
// nothing after it (RouterExecutionContext.isResponseHandled): it takes `@Res()` or
// `@Next()` without `passthrough`. The metadata keys and parameter kinds are Nest's
// (ROUTE_ARGS_METADATA, RESPONSE_PASSTHROUGH_METADATA, RouteParamtypes), unchanged since Nest 6.
const ROUTE_ARGS = '__routeArguments__'
const PASSTHROUGH = '__responsePassthrough__'
const RESPONSE = 1
const NEXT = 2
const ownResponse = new WeakMap<object, boolean>()

function sendsOwnResponse(context: ExecutionContext): boolean {
  const handler = context.getHandler()
  const known = ownResponse.get(handler)
  if (known !== undefined) return known
  const controller = context.getClass()
  const reflect = Reflect as unknown as { getMetadata?(key: string, target: object, property?: string): unknown }
  const args = (reflect.getMetadata?.(ROUTE_ARGS, controller, handler.name) ?? {}) as Record<string, unknown>
  const takesResponse = Object.keys(args).some((key) => {
    const type = Number(key.split(':')[0])
    return type === RESPONSE || type === NEXT
  })
  const passthrough = reflect.getMetadata?.(PASSTHROUGH, controller, handler.name) === true
  const result = takesResponse && !passthrough
  ownResponse.set(handler, result)
  return result
}

/**
 * Sends idem's own answer for a request whose route does not run (a replay, a problem)
 * in place of what Nest writes, and ends the interceptor's part with one value: Nest
 * takes the last value of every route's Observable, a route that sends its own response
 * (`handled`) included, and answers 500 when there is none. For such a route Nest then
 * writes nothing, so the answer goes at once; for any other Nest writes the value, which
 * is held and dropped, and the answer goes in its place.
 */
function answerInstead(subscriber: { next(value: unknown): void; complete(): void }, res: ServerResponse, answer: HttpAnswer, earlier: readonly string[], handled: boolean): void {
  const write = (): void => {
    try {
      writeAnswer(res, answer, earlier)
    } catch {
      res.destroy()
    }
  }
  if (handled) write()
  else void captureResponse(res).then(write)
  subscriber.next(undefined)
  subscriber.complete()
}

/** Writes idem's answer with the headers that were there before the route, and no others. */
function writeAnswer(res: ServerResponse, answer: HttpAnswer, earlier: readonly string[]): void {
  for (const name of res.getHeaderNames()) res.removeHeader(name)
  for (let i = 0; i + 1 < earlier.length; i += 2) if (earlier[i] !== 'content-length') res.appendHeader(earlier[i]!, earlier[i + 1]!)
  sendAnswer(res, answer, false)
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

/**
 * A webhook endpoint for NestJS, on the Express or the Fastify platform: the receiver of
 * `idem/fetch`'s `webhookReceiver` (signature checked on the raw bytes, the event
 * recorded through the inbox so the handler runs once), called from a controller method
 * with the request and the response (`@Req()`, `@Res()`); the handler gets Nest's request
 * as `event.request`. Nest parses JSON before the controller, so create the app with
 * `NestFactory.create(AppModule, { rawBody: true })`: the bytes are then on `req.rawBody`.
 * Without them the call throws an `InvalidOptionError` saying so (Nest's exception
 * filter: 500, logged, and the provider retries).
 * @throws InvalidOptionError naming the option
 * @example
 * const receive = webhookReceiver({
 *   inbox: createInbox({ store, consumer: 'stripe-webhooks' }),
 *   verify: stripeSignature({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *   handler: async (tx, event) => { await tx.query('INSERT INTO events (id) VALUES ($1)', [event.id]) },
 * })
 * \@Controller('webhooks')
 * export class WebhooksController {
 *   \@Post('stripe')
 *   stripe(@Req() req: NestRequest, @Res() res: unknown) { return receive(req, res) }
 * }
 * @see docs/webhooks.md
 */
export function webhookReceiver<Tx, Body = unknown>(options: WebhookReceiverOptions<Tx, NestRequest, Body>): (request: NestRequest, response: unknown) => Promise<void> {
  const receive = webhookReceiving('webhookReceiver', options)
  return async function webhookReceiver(request, response) {
    // Fastify's request and reply wrap Node's; Express's are Node's.
    const req = (request.raw ?? request) as IncomingMessage
    const kept = keptRawBody(request) ?? (request.body instanceof Uint8Array ? request.body : undefined)
    const delivery = nodeDelivery(req, request.url, kept, NEST_RAW_BODY)
    const answer = await receive(delivery.request, request)
    if (isReply(response)) sendToReply(response, answer)
    else sendToResponse(response as ServerResponse, answer, delivery)
  }
}

function isReply(response: unknown): response is ReplyLike {
  return response !== null && typeof response === 'object' && typeof (response as { code?: unknown }).code === 'function'
}

const NEST_RAW_BODY = 'create the app with NestFactory.create(AppModule, { rawBody: true })'
