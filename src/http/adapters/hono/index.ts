/**
 * `idem/hono`: the Idempotency-Key middleware for Hono 4. It maps Hono's request and
 * response to the middleware's exchange (`web.ts`); the middleware holds all the behaviour.
 */
import type { Context, HonoRequest, MiddlewareHandler } from 'hono'
import { cloneRawRequest } from 'hono/request'
import { protectRequests } from '../../handler.js'
import type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
import { webReply, webRequest, webResponse } from '../web/index.js'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { tooLarge } from '../../body.js'
import type { HttpRequest } from '../../exchange.js'
import { webhookReceiving, type WebhookReceiverOptions } from '../../webhooks/receiver.js'

export type { IdempotencyContext, IdempotencyOptions } from '../../options.js'
export type { WebhookEvent, WebhookEventId, WebhookReceiverOptions, WebhookVerify } from '../../webhooks/receiver.js'

/** The context variable the middleware sets: `c.get('idem')`. */
export type IdemVariables<Tx> = { idem: IdempotencyContext<Tx> | undefined }

/**
 * Hono 4 middleware. The route finds the key and its transaction with `c.get('idem')`
 * (type the app with `IdemVariables<Tx>`), and reads the body through `c.req` as usual
 * (`json()`, `text()`, `arrayBuffer()`, `parseBody()`, validators): Hono serves it from
 * the bytes the middleware read. The raw request's body has been read, as after any
 * middleware that reads it; `cloneRawRequest(c.req)` from `hono/request` gives a
 * `Request` carrying it. `scope` and `routes` receive the Hono context, so they can read
 * what authentication set on it.
 *
 * @example
 * const app = new Hono<{ Variables: IdemVariables<PgClient> }>()
 * app.use('/orders/*', idempotency({ store, scope: (c) => c.get('jwtPayload').sub }))
 * app.post('/orders', async (c) => {
 *   await c.get('idem')?.tx.query('INSERT INTO orders (body) VALUES ($1)', [await c.req.json()])
 *   return c.json({ ok: true }, 201)
 * })
 */
export function idempotency<Tx>(options: IdempotencyOptions<Tx, Context>): MiddlewareHandler<{ Variables: IdemVariables<Tx> }> {
  const { protect } = protectRequests<Tx, Context>(options)

  return async function idempotency(c, next) {
    // An earlier middleware may have read the body through c.req; Hono cached it.
    const request = c.req.raw.bodyUsed ? await cloneRawRequest(c.req) : c.req.raw
    let routeRan = false
    const runRoute = async (idem: IdempotencyContext<Tx> | undefined): Promise<void> => {
      routeRan = true
      c.set('idem', idem)
      await next()
    }
    const outcome = await protect(webRequest(request), c, {
      pass: () => runRoute(undefined),
      run: async (body, idem) => {
        serveBody(c.req, body)
        await runRoute(idem)
        // The route threw: Hono has turned the error into the app's error response, which
        // goes out as it is while the effects and the key roll back.
        if (c.error !== undefined) return { kind: 'discard', response: c.res, status: c.res.status }
        return webReply(c.res)
      },
    })
    if (outcome.kind === 'passed') return
    const response = outcome.kind === 'route' ? outcome.response : webResponse(outcome.answer)
    if (!routeRan) return response
    if (response === c.res) return
    // Assigning c.res merges the old response's headers in; clear it first so the
    // answer is exactly the middleware's.
    c.res = undefined
    c.res = response
  }
}

// Bodies up to this size are also cached as text, the form most routes read (json() parses it).
const TEXT_CACHE_BYTES = 64 * 1024
const utf8 = new TextDecoder()

/**
 * Puts the bytes the middleware read where Hono's body readers look first: its body
 * cache. Hono converts between the cached forms itself (arrayBuffer first, so that it
 * is the one converted from); what an earlier middleware cached is kept.
 */
function serveBody(req: HonoRequest, body: Uint8Array): void {
  // Hono keeps promises there (its type says values): c.req.text() returns the entry as is.
  const cache = req.bodyCache as { arrayBuffer?: Promise<ArrayBuffer>; text?: Promise<string> }
  const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength
  const buffer = whole ? (body.buffer as ArrayBuffer) : body.slice().buffer
  cache.arrayBuffer ??= Promise.resolve(buffer)
  if (body.byteLength <= TEXT_CACHE_BYTES) cache.text ??= Promise.resolve(utf8.decode(body))
}

/**
 * A webhook endpoint for Hono 4: the receiver of `idem/fetch`'s `webhookReceiver`
 * (signature checked on the raw bytes, the event recorded through the inbox so the
 * handler runs once), with Hono's context as `event.request`. It reads the raw request's
 * body, or the bytes an earlier middleware read with `c.req.arrayBuffer()`; a body an
 * earlier middleware read only as text or JSON (`c.req.json()`, a validator) has lost
 * its bytes, and the request fails with an `InvalidOptionError` saying so (Hono's
 * `onError`: 500, and the provider retries).
 * @throws InvalidOptionError naming the option
 * @example
 * app.post('/webhooks/github', webhookReceiver({
 *   inbox: createInbox({ store, consumer: 'github-webhooks' }),
 *   verify: githubSignature({ secret: process.env.GITHUB_WEBHOOK_SECRET! }),
 *   handler: async (tx, event) => { await tx.query('INSERT INTO events (id) VALUES ($1)', [event.id]) },
 * }))
 * @see docs/webhooks.md
 */
export function webhookReceiver<Tx, Body = unknown>(options: WebhookReceiverOptions<Tx, Context, Body>): (c: Context) => Promise<Response> {
  const receive = webhookReceiving('webhookReceiver', options)
  return async (c) => webResponse(await receive(honoDelivery(c.req), c))
}

/** The raw request, or the bytes an earlier middleware read from it (Hono keeps them in its body cache). */
function honoDelivery(req: HonoRequest): HttpRequest {
  const request = webRequest(req.raw)
  if (!req.raw.bodyUsed) return request
  const cache = req.bodyCache as { arrayBuffer?: Promise<ArrayBuffer> }
  const kept = cache.arrayBuffer
  if (kept === undefined) {
    throw new InvalidOptionError(
      'webhookReceiver: the body was read as text or JSON before the receiver and its raw bytes were not kept, so no signature can be checked; ' +
        'mount webhookReceiver() before that middleware, or read the body there with c.req.arrayBuffer()',
    )
  }
  return {
    ...request,
    async body(limit) {
      const bytes = new Uint8Array(await kept)
      if (bytes.byteLength > limit) throw tooLarge(limit)
      return bytes
    },
  }
}
