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
import type { IncomingMessage, ServerResponse } from 'node:http'
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
import { Observable } from 'rxjs'
import { assertKnownOptions, optionNames } from '../../../core/errors/option-checks.js'
import { protectRequests, type RequestProtection } from '../../handler.js'
import type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
import { webhookReceiving, type WebhookReceiverOptions } from '../../webhooks/receiver.js'
import { keptRawBody, nodeDelivery, sendToReply, sendToResponse, type ReplyLike } from '../../webhooks/node.js'
import { sendsOwnResponse } from './answers.js'
import { held, NestCall, type NestRequest } from './call.js'

export type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
export type { WebhookEvent, WebhookEventId, WebhookReceiverOptions, WebhookVerify } from '../../webhooks/receiver.js'

export type { NestRequest } from './call.js'

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
    return new Observable<unknown>((subscriber) => new NestCall(this.protection, { request, req, res, reply, next, handled }, subscriber).start())
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
