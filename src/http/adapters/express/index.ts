/**
 * `idem/express`: the Idempotency-Key middleware for Express 4.17+ and 5. It maps Node's
 * request and response to the middleware's exchange (`node.ts`); the middleware
 * (`handler.ts`) holds all the behaviour.
 */
import type { NextFunction, Request as ExpressRequest, RequestHandler, Response as ExpressResponse } from 'express'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import type { HttpBody, HttpRequest, RouteResult } from '../../exchange.js'
import { protectRequests, type RouteCalls } from '../../handler.js'
import { declaresBody, isParsedObject, leftBeforeRoute, nodeBody, nodeRequest, parsedBody, refillRequest, type NodeBody } from '../node/request.js'
import { sendAnswer } from '../node/answer.js'
import { captureResponse, release, sendHeld } from '../node/response.js'
import type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
import { problemAnswer } from '../../problem.js'
import { webhookReceiving, type WebhookReceiverOptions } from '../../webhooks/receiver.js'
import { keptRawBody, nodeDelivery, sendToResponse, type NodeDelivery } from '../../webhooks/node.js'

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The held key and its transaction while idem protects the request; unset otherwise. */
      idem?: IdempotencyContext<unknown>
    }
  }
}

// The raw bytes a webhook route keeps for its signature check, as the docs show:
// `express.json({ verify: (req, _res, buf) => { req.rawBody = buf } })`. Express's
// `verify` gets Node's request, so the field is declared there (Express's request
// extends it), with the type NestJS's `RawBodyRequest` gives it.
declare module 'http' {
  interface IncomingMessage {
    /** The request body's raw bytes, when a body parser's `verify` hook kept them; read by `webhookReceiver`. */
    rawBody?: Buffer
  }
}

export type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
export type { WebhookEvent, WebhookEventId, WebhookReceiverOptions, WebhookVerify } from '../../webhooks/receiver.js'

/**
 * Express 4.17+ and 5 middleware. Mount it before body parsers (`express.json()` and friends):
 * it reads the raw body for the fingerprint and puts the same bytes back for them. The
 * route handler finds the key and its transaction on `req.idem`; the response it
 * writes is held until the transaction commits. Once the route has ended its response,
 * that is the answer: an error handler's after it (the route threw, or called
 * `next(err)`) is dropped and reported (`route-failed-after-answer`). `scope` and
 * `routes` receive the Express request, so they can read what authentication set on it.
 * A route still running at `deadlineMs` (30 s by default) is rolled back and answered
 * 503 `overran`.
 *
 * @example
 * app.use(idempotency({ store, scope: (req) => req.get('x-account-id') ?? 'anonymous' }))
 * app.use(express.json())
 * app.post('/orders', async (req, res, next) => {
 *   try {
 *     const { tx } = req.idem as IdempotencyContext<PgClient>
 *     await tx.query('INSERT INTO orders (body) VALUES ($1)', [req.body])
 *     res.status(201).json({ ok: true })
 *   } catch (error) {
 *     next(error) // Express 4 does not catch a rejected promise: a route that never answers holds its key until deadlineMs
 *   }
 * })
 */
export function idempotency<Tx>(options: IdempotencyOptions<Tx, ExpressRequest>): RequestHandler {
  const protection = protectRequests<Tx, ExpressRequest>(options)
  return function idempotency(req: ExpressRequest, res: ExpressResponse, next: NextFunction): void {
    if (!protection.covers(req.method)) return next()
    const read = readRequest(req, res, next)
    if (read === undefined) return
    const { request, body } = read
    // The client left before its route started: the claim is rolled back, nothing is sent.
    let clientLeft = false
    const route: RouteCalls<Tx, HttpBody> = {
      pass: async () => next(),
      run: async (bytes, idem): Promise<RouteResult<HttpBody>> => {
        // (Mount the body parser right after the middleware: a client that leaves during
        // an async middleware in between is not seen here.)
        const left = leftBeforeRoute(req, body !== undefined, bytes, '')
        if (left !== undefined) {
          clientLeft = true
          return left
        }
        if (body !== undefined) refillRequest(req, bytes)
        req.idem = idem
        // Once the route has answered, its answer stands: an error handler's, after the
        // route threw or called next(err), is dropped and told.
        const reply = captureResponse(res, (answered, second) => protection.answeredThenFailed(request, answered, { secondAnswer: second }))
        next()
        return reply
      },
    }
    protection.protect(request, req, route).then(
      (outcome) => {
        if (outcome.kind === 'passed') return
        // Nobody is left to answer.
        if (clientLeft) return void res.destroy()
        const close = body?.unfinished() ?? false
        if (outcome.kind === 'route') sendHeld(res, outcome.response, close)
        else sendAnswer(res, outcome.answer, close)
      },
      (error: unknown) => {
        // Express's error handlers answer. If the route already ran, its held response
        // is dropped: the transaction rolled back, so it must not be sent as a success.
        release(res)
        if (!res.headersSent && !res.writableEnded) next(error)
      },
    ).catch((error: unknown) => res.destroy(error as Error))
  }
}

/**
 * The request as the middleware's exchange, and its body stream when no parser has read
 * it yet; `undefined` when it has answered (a body read and kept nowhere) or handed an
 * error to Express.
 */
function readRequest(req: ExpressRequest, res: ExpressResponse, next: NextFunction): { request: HttpRequest; body: NodeBody | undefined } | undefined {
  // A body parser mounted earlier has read the stream; the parsed body is all there is.
  const parsedEarlier = req.readableEnded
  if (parsedEarlier && req.body === undefined && declaresBody(req)) {
    // Something read the body and kept nothing: the fingerprint would miss the payload.
    sendAnswer(res, problemAnswer(new InvalidOptionError(UNREADABLE_BODY), undefined), false)
    return undefined
  }
  const body = parsedEarlier ? undefined : nodeBody(req)
  try {
    // A parsed form or JSON body is fingerprinted as JSON, compared canonically.
    const request = body === undefined ? nodeRequest(req, req.originalUrl, parsedBody(req.body), isParsedObject(req.body) ? 'application/json' : undefined) : nodeRequest(req, req.originalUrl, body)
    return { request, body }
  } catch (error) {
    next(error)
    return undefined
  }
}

const UNREADABLE_BODY =
  'idempotency (express): the request body was read before the middleware and not kept on req.body; ' +
  'mount idempotency() before the middleware that reads it'

/**
 * A webhook endpoint for Express 4.17+ and 5: the receiver of `idem/fetch`'s
 * `webhookReceiver` (signature checked on the raw bytes, the event recorded through the
 * inbox so the handler runs once) on Express's own request, which the handler gets as
 * `event.request`. Mount it before `express.json()` (it reads the stream itself), or
 * after a parser that keeps the raw bytes: `express.raw({ type: '*\/*' })` (its Buffer),
 * or `express.json({ verify: (req, _res, buf) => { req.rawBody = buf } })`. A body parsed
 * without its bytes kept cannot be verified: the request is handed to Express's error
 * handling with an `InvalidOptionError` saying so (500, and the provider retries).
 * @throws InvalidOptionError naming the option
 * @example
 * app.use(express.json({ verify: (req, _res, buf) => { req.rawBody = buf } })) // or mount the receiver before it
 * app.post('/webhooks/stripe', webhookReceiver({
 *   inbox: createInbox({ store, consumer: 'stripe-webhooks' }),
 *   verify: stripeSignature({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *   handler: async (tx, event) => { await tx.query('UPDATE orders SET paid = true WHERE …') },
 * }))
 * @see docs/webhooks.md
 */
export function webhookReceiver<Tx, Body = unknown>(options: WebhookReceiverOptions<Tx, ExpressRequest, Body>): RequestHandler {
  const receive = webhookReceiving('webhookReceiver', options)
  return function webhookReceiver(req: ExpressRequest, res: ExpressResponse, next: NextFunction): void {
    let delivery: NodeDelivery
    try {
      delivery = nodeDelivery(req, req.originalUrl, req.body instanceof Uint8Array ? req.body : keptRawBody(req), EXPRESS_RAW_BODY)
    } catch (error) {
      next(error)
      return
    }
    receive(delivery.request, req).then(
      (answer) => sendToResponse(res, answer, delivery),
      (error: unknown) => {
        if (!res.headersSent) next(error)
      },
    )
  }
}

const EXPRESS_RAW_BODY =
  'mount webhookReceiver() before express.json(), or keep the bytes: express.json({ verify: (req, _res, buf) => { req.rawBody = buf } }) or express.raw({ type: "*/*" }) on the webhook route'
