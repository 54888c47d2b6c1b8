/**
 * `idem/koa`: the Idempotency-Key middleware for Koa 2 and 3. It maps Koa's context to
 * the middleware's exchange: the request through Node's (`node-request.ts`), the route's
 * reply read from the context once the route has run (`koa-reply.ts`: Koa sends the
 * response itself after its middleware has unwound, so nothing is held on Node's
 * response). The middleware (`handler.ts`) holds all the behaviour.
 */
import type { OutgoingHttpHeaders } from 'node:http'
import type { Context, Middleware, Next, ParameterizedContext } from 'koa'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import type { HttpAnswer, HttpRequest } from '../../exchange.js'
import { protectRequests, type RouteCalls } from '../../handler.js'
import { answerWith, koaReply, refuseTakeover, restoreHeaders, type Takeover } from './reply.js'
import { declaresBody, isParsedObject, leftBeforeRoute, nodeBody, nodeRequest, parsedBody, refillRequest, type NodeBody } from '../node/request.js'
import { sendAnswer } from '../node/answer.js'
import type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
import { problemAnswer } from '../../problem.js'
import { webhookReceiving, type WebhookReceiverOptions } from '../../webhooks/receiver.js'
import { keptRawBody, nodeDelivery } from '../../webhooks/node.js'

export type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
export type { WebhookEvent, WebhookEventId, WebhookReceiverOptions, WebhookVerify } from '../../webhooks/receiver.js'
export { RouteHijackedError } from '../node/route-hijacked.js'

/** The state the middleware adds to Koa's `ctx.state`: the held key and its transaction, unset when the request is not protected. */
export interface IdemState<Tx> {
  /** The held key and its transaction while idem protects the request; unset otherwise. */
  idem?: IdempotencyContext<Tx>
}

/**
 * Koa 2 and 3 middleware. Mount it before the body parser (`@koa/bodyparser`,
 * `koa-body`): it reads the raw body for the fingerprint and puts the same bytes back for
 * the parser; mounted after one, it fingerprints what the parser kept (its `rawBody`
 * text, else the parsed body as JSON). The route finds the key and its transaction on
 * `ctx.state.idem` (type the app or router with `IdemState<Tx>`) and answers as usual,
 * with `ctx.status` and `ctx.body`: idem reads that answer when the route returns (a
 * stream body is read whole), stores it with the effects, and Koa sends it. A route that
 * throws is rolled back and Koa's error handling answers as it would; setting
 * `ctx.respond = false` throws `RouteHijackedError` (500 `route-hijacked`). `scope` and
 * `routes` receive Koa's context, so they can read what authentication set on it. A route
 * still running at `deadlineMs` (30 s by default) is rolled back and answered 503 `overran`.
 *
 * @example
 * const app = new Koa<IdemState<PgClient>>()
 * app.use(idempotency({ store, scope: (ctx) => ctx.get('x-account-id') || 'anonymous' }))
 * app.use(async (ctx) => {
 *   const { tx } = ctx.state.idem!         // the open transaction: write through it
 *   await tx.query('INSERT INTO orders (body) VALUES ($1)', [await readOrder(ctx)])
 *   ctx.status = 201
 *   ctx.body = { ok: true }
 * })
 */
export function idempotency<Tx>(options: IdempotencyOptions<Tx, Context>): Middleware<IdemState<Tx>> {
  const { covers, protect } = protectRequests<Tx, Context>(options)

  return async function idempotency(ctx, next) {
    if (!covers(ctx.method)) return next()
    const read = readRequest(ctx)
    if (read === undefined) return answerWith(ctx, problemAnswer(new InvalidOptionError(UNREADABLE_BODY), undefined), false)
    const route: RouteState = { running: false, clientLeft: false }
    const outcome = await protect(read.request, ctx, routeCalls(ctx, next, read, route))
    if (route.clientLeft) {
      // Nobody is left to answer.
      ctx.respond = false
      ctx.res.destroy()
    } else if (outcome.kind === 'answer') answerOwn(ctx, outcome.answer, route, read.body?.unfinished() ?? false)
  }
}

/** A protected request's route, as far as idem's own answer depends on it. */
interface RouteState {
  /** The response's headers before the route (earlier middleware's); set once it starts. */
  earlier?: OutgoingHttpHeaders
  /** The route's `ctx.respond`, watched while it runs. */
  takeover?: Takeover
  /** The route has not returned yet (idem answers for it past its deadline). */
  running: boolean
  /** The client left before its route started: the claim is rolled back, nothing is sent. */
  clientLeft: boolean
}

/** Hands the request on: unprotected, or to the route while idem holds its key, whose answer is then read from `ctx`. */
function routeCalls<Tx>(ctx: ParameterizedContext<IdemState<Tx>>, next: Next, { request, body }: KoaRequest, route: RouteState): RouteCalls<Tx, null> {
  return {
    pass: async () => {
      await next()
    },
    async run(bytes, idem) {
      const left = leftBeforeRoute(ctx.req, body !== undefined, bytes, null)
      if (left !== undefined) {
        route.clientLeft = true
        return left
      }
      if (body !== undefined) refillRequest(ctx.req, bytes)
      ctx.state.idem = idem
      route.earlier = ctx.response.headers
      const takeover = (route.takeover = refuseTakeover(ctx, request))
      route.running = true
      const failed = await next().then(
        () => undefined,
        (error: unknown) => ({ error }),
      )
      route.running = false
      const refused = takeover.end()
      if (refused !== undefined) throw refused
      if (failed !== undefined) throw failed.error
      return koaReply(ctx)
    },
  }
}

/** Puts idem's own answer (a replay, a problem) on the response, instead of what a route that ran set there. */
function answerOwn(ctx: Context, answer: HttpAnswer, route: RouteState, closeConnection: boolean): void {
  // After a route that ran (a store that failed after it, its deadline), what it set goes.
  if (route.earlier !== undefined) restoreHeaders(ctx.res, route.earlier)
  if (!route.running && !latin1Disposition(answer)) return answerWith(ctx, answer, closeConnection)
  // Past its deadline the route still runs and may still change ctx: the answer goes out now,
  // around Koa. So does one with a Content-Disposition beyond ASCII: Koa ends the response
  // with its body, and Node then re-reads that field's bytes as UTF-8 (nodejs/node#46528),
  // so only a head written before the body carries them as stored.
  route.takeover?.end()
  ctx.respond = false
  sendAnswer(ctx.res, answer, closeConnection)
}

/** A request as the middleware reads it, and its stream when idem reads it (refilled for the parsers after it). */
interface KoaRequest {
  readonly request: HttpRequest
  readonly body?: NodeBody
}

/**
 * The request as the middleware reads it: its stream, unread (`body`, refilled for the
 * parsers after idem), or what a body parser mounted earlier kept of it; undefined when
 * one read it and kept nothing.
 */
function readRequest(ctx: Context): KoaRequest | undefined {
  const { req, originalUrl } = ctx
  if (!req.readableEnded) {
    const body = nodeBody(req)
    return { request: nodeRequest(req, originalUrl, body), body }
  }
  // @koa/bodyparser keeps the text it parsed (`rawBody`); others only what they parsed.
  const raw = keptRawBody(ctx.request)
  if (typeof raw === 'string' || raw instanceof Uint8Array) return { request: nodeRequest(req, originalUrl, raw) }
  const parsed = 'body' in ctx.request ? ctx.request.body : undefined
  // Something read the body and kept nothing: the fingerprint would miss the payload.
  if (parsed === undefined && declaresBody(req)) return undefined
  // A parsed form or JSON body is fingerprinted as JSON, compared canonically.
  return { request: nodeRequest(req, originalUrl, parsedBody(parsed), isParsedObject(parsed) ? 'application/json' : undefined) }
}

const UNREADABLE_BODY =
  'idempotency (koa): the request body was read before the middleware and kept neither on ctx.request.rawBody nor on ctx.request.body; ' +
  'mount idempotency() before the middleware that reads it'

/**
 * A webhook endpoint for Koa 2 and 3: the receiver of `idem/fetch`'s `webhookReceiver`
 * (signature checked on the raw bytes, the event recorded through the inbox so the
 * handler runs once), with Koa's context as `event.request`. Mount it where the webhook's
 * path is served (a router's route), before the body parser (it reads the stream itself)
 * or after one that keeps the raw text, as `@koa/bodyparser` does (`ctx.request.rawBody`,
 * taken as UTF-8), or the bytes (a Buffer on `ctx.request.body` or `rawBody`). A body
 * parsed without its bytes kept cannot be verified: the receiver throws an
 * `InvalidOptionError` saying so, which Koa answers 500 (and the provider retries).
 * @throws InvalidOptionError naming the option
 * @example
 * router.post('/webhooks/stripe', webhookReceiver({
 *   inbox: createInbox({ store, consumer: 'stripe-webhooks' }),
 *   verify: stripeSignature({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *   handler: async (tx, event) => { await tx.query('UPDATE orders SET paid = true WHERE …') },
 * }))
 * @see docs/webhooks.md
 */
export function webhookReceiver<Tx, Body = unknown>(options: WebhookReceiverOptions<Tx, Context, Body>): Middleware {
  const receive = webhookReceiving('webhookReceiver', options)
  return async function webhookReceiver(ctx) {
    const delivery = nodeDelivery(ctx.req, ctx.originalUrl, keptBytes(ctx), KOA_RAW_BODY)
    answerWith(ctx, await receive(delivery.request, ctx), delivery.unfinished())
  }
}

// The delivery's bytes as a body parser kept them: bytes as they are, @koa/bodyparser's text as UTF-8.
function keptBytes(ctx: Context): Uint8Array | undefined {
  const parsed = 'body' in ctx.request ? ctx.request.body : undefined
  if (parsed instanceof Uint8Array) return parsed
  const raw = keptRawBody(ctx.request)
  if (typeof raw === 'string') return Buffer.from(raw, 'utf8')
  return raw instanceof Uint8Array ? raw : undefined
}

const KOA_RAW_BODY = 'mount webhookReceiver() before the body parser, or after one that keeps the raw body on ctx.request.rawBody (@koa/bodyparser does)'

// A stored Content-Disposition value with a byte above 0x7F (a filename a Lambda function
// answered in UTF-8, say).
function latin1Disposition(answer: HttpAnswer): boolean {
  const { headers } = answer
  for (let i = 0; i + 1 < headers.length; i += 2) if (headers[i] === 'content-disposition' && /[^\x00-\x7f]/.test(headers[i + 1]!)) return true
  return false
}
