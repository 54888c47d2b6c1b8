/**
 * `idem/fastify`: the Idempotency-Key plugin for Fastify 5. It maps Fastify's request and
 * reply to the middleware's exchange; the middleware (`handler.ts`) holds all the behaviour.
 *
 * Fastify has no middleware that wraps the route, so the wrap is spread over hooks:
 * `preParsing` starts the middleware with the raw body (and either answers at
 * once or lets Fastify go on with the same bytes), `onSend` hands the route's reply
 * back to it and sends what it answers, `onError` marks a route that threw so that
 * the transaction rolls back.
 */
import { Readable } from 'node:stream'
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify'
import { NO_BODY_STATUSES } from '../headers/no-body-statuses.js'
import type { HttpAnswer, HttpBody, Protected, RouteResult } from './exchange.js'
import { protectRequests } from './handler.js'
import { nodeBody, nodeRequest, recordHeaders } from './node.js'
import { wireValue } from './header-field.js'
import type { IdempotencyContext, IdempotencyOptions } from './options.js'
import { webhookReceiving, type WebhookReceiverOptions } from './webhook.js'
import { keptRawBody, nodeDelivery, sendToReply } from './webhook-node.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The held key and its transaction while idem protects the request; null otherwise. */
    idem: IdempotencyContext<unknown> | null
  }
}

/**
 * The route's reply as Fastify's `onSend` has it: its payload, sent as it is, or (for a
 * stream or a Web Response, read to store it) its status, headers and bytes.
 */
type Payload = { readonly payload: unknown } | { readonly answer: HttpAnswer }

/** A protected request between `preParsing` and `onSend`. */
interface Held {
  /** Hands the route's reply to the middleware (discarded: rolled back, not stored). */
  resolve(reply: RouteResult<Payload>): void
  reject(error: unknown): void
  /** The middleware's decision: the reply itself (stored), or an answer of its own. */
  decided: Promise<Protected<Payload>>
  /** What the route threw, seen by `onError`. */
  error?: unknown
  /** The client closed the connection before the reply was sent. */
  closed: boolean
  /** The route's handler (an async one) has settled. */
  handlerDone: boolean
}

export type { WebhookEvent, WebhookEventId, WebhookReceiverOptions, WebhookVerify } from './webhook.js'

// `Held.decided` until the middleware has returned its promise.
const UNSET: Promise<Protected<Payload>> = new Promise(() => {})

/**
 * Fastify 5 plugin. Register it before the routes it protects, where its hooks should
 * apply (the root, or an encapsulated context). The route finds the key and its
 * transaction on `request.idem`. `scope` and `routes` receive the Fastify request, so they
 * can read what an `onRequest` authentication hook set on it (authenticate in `onRequest`: a
 * reply sent by a later hook counts as the route's response).
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
  const { covers, protect } = protectRequests<Tx, FastifyRequest>(options)
  const held = new WeakMap<FastifyRequest, Held>()

  const plugin: FastifyPluginCallback = (fastify, _options, done) => {
    if (!fastify.hasRequestDecorator('idem')) fastify.decorateRequest('idem', null)

    fastify.addHook('preParsing', (request, reply, payload, hookDone) => {
      if (!covers(request.method)) {
        hookDone(null, payload)
        return
      }
      const body = nodeBody(payload)
      let routeStarted = false
      // Filled in below; `onSend` reads `decided`, long after `protect` returned it.
      const entry: Held = { resolve: () => {}, reject: () => {}, decided: UNSET, closed: false, handlerDone: false }
      let decided: Promise<Protected<Payload>>
      try {
        decided = protect(nodeRequest(request.raw, request.url, body), request, {
          pass: async () => {
            routeStarted = true
            hookDone(null, payload)
          },
          run: async (bytes, idem) => {
            routeStarted = true
            const route = new Promise<RouteResult<Payload>>((resolve, reject) => Object.assign(entry, { resolve, reject }))
            held.set(request, entry)
            request.idem = idem
            reply.raw.once('close', () => {
              entry.closed = true
              abandonIfUnanswered(request)
            })
            hookDone(null, Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]))
            return route
          },
        })
        entry.decided = decided
      } catch (error) {
        hookDone(error as Error)
        return
      }
      decided.then(
        (outcome) => {
          if (routeStarted) {
            // Answered while the route still runs (past its deadline): idem answers for it,
            // and a reply the route sends later is Fastify's to refuse ("already sent").
            if (outcome.kind === 'answer' && held.get(request) === entry) {
              held.delete(request)
              void reply.send(bufferOf(writeAnswer(reply, outcome.answer, true)))
            }
            return
          }
          if (outcome.kind !== 'answer') return
          const sent = writeAnswer(reply, outcome.answer, false)
          if (body.unfinished()) reply.header('connection', 'close')
          void reply.send(bufferOf(sent))
        },
        (error: unknown) => {
          if (!routeStarted) hookDone(error as Error)
        },
      )
    })

    // Wraps each route's handler to learn when an async one settles: if its client has
    // gone, Fastify may then send nothing, and the held transaction must be ended.
    fastify.addHook('onRoute', (route) => {
      const handler = route.handler
      route.handler = function idemRoute(this: unknown, request, reply) {
        const result: unknown = handler.call(this as never, request, reply)
        if (held.has(request) && isThenable(result)) {
          const settled = (): void => {
            const entry = held.get(request)
            if (entry === undefined) return
            entry.handlerDone = true
            abandonIfUnanswered(request)
          }
          result.then(settled, settled)
        }
        return result as ReturnType<typeof handler>
      }
    })

    fastify.addHook('onError', (request, _reply, error, hookDone) => {
      const entry = held.get(request)
      if (entry !== undefined) entry.error = error
      hookDone()
    })

    fastify.addHook('onSend', (request, reply, payload, hookDone) => {
      const entry = held.get(request)
      if (entry === undefined) {
        hookDone(null, payload)
        return
      }
      held.delete(request)
      if (entry.error !== undefined) {
        // The route threw: roll back, and let Fastify's error reply go out as it is.
        entry.reject(entry.error)
        entry.decided.then(
          (outcome) => hookDone(null, outcome.kind === 'answer' ? writeAnswer(reply, outcome.answer, true) : payload),
          () => hookDone(null, payload),
        )
        return
      }
      routeReply(reply, payload).then(entry.resolve, entry.reject)
      entry.decided.then(
        (outcome) => hookDone(null, outcome.kind === 'answer' ? writeAnswer(reply, outcome.answer, true) : outcome.kind === 'route' ? writePayload(reply, outcome.response) : payload),
        (error: unknown) => hookDone(error as Error),
      )
    })

    done()
  }

  // The client went away and the route has finished without a reply reaching `onSend`:
  // roll back. Never earlier: the route may still be writing through the transaction,
  // and writes after a rollback would land outside it.
  function abandonIfUnanswered(request: FastifyRequest): void {
    const entry = held.get(request)
    if (entry === undefined || !entry.closed || !entry.handlerDone) return
    held.delete(request)
    // Nobody is left to answer: roll back, and the retry runs again.
    entry.resolve({ kind: 'discard', response: { payload: null }, status: 499 })
    entry.decided.catch(() => {})
  }

  // Applies the hooks to the context that registers the plugin, as fastify-plugin would.
  return Object.assign(plugin, { [Symbol.for('skip-override')]: true })
}

/** The route's reply: Fastify's payload is text, bytes, a stream, a Web Response or nothing. */
async function routeReply(reply: FastifyReply, payload: unknown): Promise<RouteResult<Payload>> {
  if (payload === null || payload === undefined || typeof payload === 'string' || payload instanceof Uint8Array) {
    const body: HttpBody = payload ?? ''
    return { kind: 'reply', response: { payload }, status: reply.statusCode, body, headers: (names) => recordHeaders(reply.getHeaders(), names) }
  }
  // A stream or a Response is read whole to store it; the bytes read are what is sent.
  let status = reply.statusCode
  const headers = recordHeaders(reply.getHeaders())
  let body: Uint8Array
  if (isWebResponse(payload)) {
    status = payload.status
    for (const [name, value] of payload.headers) {
      if (name !== 'set-cookie') removeField(headers, name)
      headers.push(name, value)
    }
    body = new Uint8Array(await payload.arrayBuffer())
  } else body = new Uint8Array(await new Response(payload as ConstructorParameters<typeof Response>[0]).arrayBuffer())
  const answer: HttpAnswer = { status, headers, body }
  return { kind: 'reply', response: { answer }, status, body, headers: (names) => picked(headers, names) }
}

// The fields of a flat list whose names are in `names`.
function picked(headers: readonly string[], names: ReadonlySet<string>): string[] {
  const list: string[] = []
  for (let i = 0; i + 1 < headers.length; i += 2) if (names.has(headers[i]!)) list.push(headers[i]!, headers[i + 1]!)
  return list
}

function removeField(headers: string[], name: string): void {
  for (let i = headers.length - 2; i >= 0; i -= 2) if (headers[i] === name) headers.splice(i, 2)
}

/** The route's own reply: its payload as it is, or what was read of it. */
function writePayload(reply: FastifyReply, response: Payload): unknown {
  return 'payload' in response ? response.payload : writeAnswer(reply, response.answer, true)
}

/**
 * Puts an answer on the reply and returns its body for Fastify to send. `replace` drops
 * what the route set first; otherwise (the route did not run) the headers set before it
 * (CORS, a request id) are kept, and the answer's own replace any of the same name.
 */
function writeAnswer(reply: FastifyReply, answer: HttpAnswer, replace: boolean): Buffer | string | null {
  if (replace) for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name)
  reply.code(answer.status)
  // Fastify keeps one value a name: a repeated field is joined, as a list of values, but
  // Set-Cookie stays a list. Each value goes out as its bytes (`wireValue`).
  const fields = new Map<string, string[]>()
  const { headers } = answer
  for (let i = 0; i + 1 < headers.length; i += 2) fields.set(headers[i]!, [...(fields.get(headers[i]!) ?? []), wireValue(headers[i + 1]!)])
  for (const [name, values] of fields) reply.header(name, name === 'set-cookie' ? values : values.join(', '))
  const { body } = answer
  if (NO_BODY_STATUSES.has(answer.status)) return null
  if (typeof body === 'string') return body === '' ? null : body
  return body.byteLength === 0 ? null : Buffer.from(body.buffer, body.byteOffset, body.byteLength)
}

// `reply.send` adds a charset to the content type of a string, and sends null as JSON
// ("null"): bytes go out as they are, and no body as nothing.
function bufferOf(body: Buffer | string | null): Buffer | undefined {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : (body ?? undefined)
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function'
}

function isWebResponse(value: unknown): value is Response {
  return Object.prototype.toString.call(value) === '[object Response]'
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
export function webhookReceiver<Tx>(options: WebhookReceiverOptions<Tx, FastifyRequest>): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> {
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
