/**
 * `idem/fastify`: the Idempotency-Key plugin for Fastify 5. It maps Fastify's request and
 * reply to the middleware's exchange, in hooks (`fastify-hooks.ts`: Fastify has no
 * middleware that wraps the route); the middleware (`handler.ts`) holds all the behaviour.
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify'
import { protectionHooks } from './hooks.js'
import { protectRequests } from '../../handler.js'
import type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
import { webhookReceiving, type WebhookReceiverOptions } from '../../webhooks/receiver.js'
import { keptRawBody, nodeDelivery, sendToReply } from '../../webhooks/node.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The held key and its transaction while idem protects the request; null otherwise. */
    idem: IdempotencyContext<unknown> | null
  }
}

export type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
export type { WebhookEvent, WebhookEventId, WebhookReceiverOptions, WebhookVerify } from '../../webhooks/receiver.js'
export { RouteHijackedError } from '../node/route-hijacked.js'

/**
 * Fastify 5 plugin. Register it before the routes it protects, where its hooks should
 * apply (the root, or an encapsulated context). The route finds the key and its
 * transaction on `request.idem`. `scope` and `routes` receive the Fastify request, so they
 * can read what an `onRequest` authentication hook set on it (authenticate in `onRequest`: a
 * reply sent by a later hook counts as the route's response). Once the route has sent its
 * reply, that reply is the answer: an error after it is reported (`route-failed-after-answer`),
 * never sent in its place. A protected route cannot take its reply over: its `reply.hijack()`
 * throws `RouteHijackedError` and the client is answered 500 `route-hijacked`.
 *
 * @example
 * await app.register(idempotency({ store, scope: (req) => req.headers.authorization ?? 'anonymous' }))
 * app.post('/orders', async (request, reply) => {
 *   const { tx } = request.idem as IdempotencyContext<PgClient>
 *   await tx.query('INSERT INTO orders (body) VALUES ($1)', [request.body])
 *   return reply.code(201).send({ ok: true })
 * })
 */
export function idempotency<Tx>(options: IdempotencyOptions<Tx, FastifyRequest>): FastifyPluginCallback {
  const hooks = protectionHooks(protectRequests<Tx, FastifyRequest>(options))
  const plugin: FastifyPluginCallback = (fastify, _options, done) => {
    if (!fastify.hasRequestDecorator('idem')) fastify.decorateRequest('idem', null)
    fastify.addHook('preParsing', hooks.preParsing)
    fastify.addHook('onRoute', hooks.onRoute)
    fastify.addHook('onError', hooks.onError)
    fastify.addHook('onSend', hooks.onSend)
    done()
  }
  // Applies the hooks to the context that registers the plugin, as fastify-plugin would.
  return Object.assign(plugin, { [Symbol.for('skip-override')]: true })
}

/**
 * A webhook route handler for Fastify 5: the receiver of `idem/fetch`'s `webhookReceiver`
 * (signature checked on the raw bytes, the event recorded through the inbox so the
 * handler runs once), with Fastify's request as `event.request`. Fastify parses a body
 * before the handler, so give the webhook routes a parser that keeps the bytes, in a
 * plugin of their own:
 * `app.removeAllContentTypeParsers(); app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))`
 * (or a `rawBody` Buffer, as fastify-raw-body with `encoding: false` or NestJS's
 * `rawBody: true` keep). A body parsed without its bytes kept cannot be verified: the
 * handler throws an `InvalidOptionError` saying so (500, logged, and the provider retries).
 * @throws InvalidOptionError naming the option
 * @example
 * await app.register(async (webhooks) => {
 *   webhooks.removeAllContentTypeParsers()
 *   webhooks.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
 *   webhooks.post('/webhooks/stripe', webhookReceiver({
 *     inbox: createInbox({ store, consumer: 'stripe-webhooks' }),
 *     verify: stripeSignature({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *     handler: async (tx, event) => { await tx.query('INSERT INTO events (id) VALUES ($1)', [event.id]) },
 *   }))
 * })
 * @see docs/webhooks.md
 */
export function webhookReceiver<Tx, Body = unknown>(options: WebhookReceiverOptions<Tx, FastifyRequest, Body>): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> {
  const receive = webhookReceiving('webhookReceiver', options)
  return async function webhookReceiver(request, reply) {
    const kept = request.body instanceof Uint8Array ? request.body : keptRawBody(request)
    const delivery = nodeDelivery(request.raw, request.url, kept, FASTIFY_RAW_BODY)
    sendToReply(reply, await receive(delivery.request, request))
    return reply
  }
}

const FASTIFY_RAW_BODY =
  "register the webhook route in a plugin that parses its body as a buffer: addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body)), " +
  'after removeAllContentTypeParsers()'
