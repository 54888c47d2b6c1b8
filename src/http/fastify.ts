/**
 * `idem/fastify`: the Idempotency-Key plugin for Fastify 5. It converts to and from the
 * neutral handler (`idem/fetch`), which holds all the behaviour.
 *
 * Fastify has no middleware that wraps the route, so the wrap is spread over hooks:
 * `preParsing` starts the neutral handler with the raw body (and either answers at
 * once or lets Fastify go on with the same bytes), `onSend` hands the route's reply
 * back to it and sends what it answers, `onError` marks a route that threw so that
 * the transaction rolls back.
 */
import type { OutgoingHttpHeaders } from 'node:http'
import { Readable } from 'node:stream'
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify'
import { discard, type Discarded } from '../core/result.js'
import { protectRequests } from './handler.js'
import { nodeBody, setWebHeaders, webHeaders, webRequest } from './node.js'
import type { IdempotencyContext, IdempotencyOptions } from './options.js'
import { bodyBytes, streamlessResponse } from './stored-response.js'

export type { IdempotencyContext, IdempotencyOptions } from './options.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The held key and its transaction while idem protects the request; null otherwise. */
    idem: IdempotencyContext<unknown> | null
  }
}

/** A protected request between `preParsing` and `onSend`. */
interface Held {
  /** Hands the route's reply to the neutral handler (discarded: rolled back, not stored). */
  resolve(response: Response | Discarded<Response>): void
  reject(error: unknown): void
  /** The neutral handler's answer: the reply itself (stored), or a problem. */
  answer: Promise<Response>
  /** What the route threw, seen by `onError`. */
  error?: unknown
  /** The client closed the connection before the reply was sent. */
  closed: boolean
  /** The route's handler (an async one) has settled. */
  handlerDone: boolean
}

const PASSED = Symbol('passed through')
// `Held.answer` until the neutral handler has returned its promise.
const UNSET: Promise<Response> = new Promise(() => {})

/**
 * Fastify 5 plugin. Register it before the routes it protects, where its hooks should
 * apply (the root, or an encapsulated context). The route finds the key and its
 * transaction on `request.idem`. `scope` receives the Fastify request, so it can read
 * what an `onRequest` authentication hook set on it (authenticate in `onRequest`: a
 * reply sent by a later hook counts as the route's response).
 *
 * @example
 * await app.register(idempotency({ store, scope: (_request, req) => req.headers.authorization ?? 'anonymous' }))
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
      // Filled in below; `onSend` reads `answer`, long after `protect` returned it.
      const entry: Held = { resolve: () => {}, reject: () => {}, answer: UNSET, closed: false, handlerDone: false }
      let answer: Promise<Response | typeof PASSED>
      try {
        answer = protect(webRequest(request.raw, request.url, body), request, {
          pass: async () => {
            routeStarted = true
            hookDone(null, payload)
            return PASSED as unknown as Response
          },
          run: async (bytes, idem) => {
            routeStarted = true
            const route = new Promise<Response | Discarded<Response>>((resolve, reject) => Object.assign(entry, { resolve, reject }))
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
        entry.answer = answer as Promise<Response>
      } catch (error) {
        hookDone(error as Error)
        return
      }
      answer.then(
        (response) => {
          if (routeStarted) {
            // Answered while the route still runs (past its deadline): idem answers for it,
            // and a reply the route sends later is Fastify's to refuse ("already sent").
            if (response !== PASSED && held.get(request) === entry) {
              held.delete(request)
              void writeReply(reply, response).then((bytes) => reply.send(bytes), (error: unknown) => reply.send(error))
            }
            return
          }
          if (body.unfinished()) reply.header('connection', 'close')
          void reply.send(response)
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
        entry.answer.then(
          (response) => writeReply(reply, response).then((bytes) => hookDone(null, bytes)),
          () => hookDone(null, payload),
        )
        return
      }
      replyResponse(reply, payload).then(entry.resolve, entry.reject)
      entry.answer.then(
        (response) => writeReply(reply, response).then((bytes) => hookDone(null, bytes)),
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
    entry.resolve(discard(streamlessResponse(499, '', new Headers(), new Uint8Array(0))))
    entry.answer.catch(() => {})
  }

  // Applies the hooks to the context that registers the plugin, as fastify-plugin would.
  ;(plugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true
  return plugin
}

/** The route's reply as a Web Response (Fastify's payload is text, bytes, a stream, a Response or nothing). */
async function replyResponse(reply: FastifyReply, payload: unknown): Promise<Response> {
  const headers = webHeaders(reply.getHeaders() as OutgoingHttpHeaders)
  let status = reply.statusCode
  let bytes: Uint8Array
  if (isWebResponse(payload)) {
    status = payload.status
    payload.headers.forEach((value, name) => (name === 'set-cookie' ? headers.append(name, value) : headers.set(name, value)))
    bytes = new Uint8Array(await payload.arrayBuffer())
  } else if (payload === null || payload === undefined) {
    bytes = new Uint8Array(0)
  } else if (typeof payload === 'string') {
    bytes = Buffer.from(payload)
  } else if (payload instanceof Uint8Array) {
    bytes = payload
  } else {
    bytes = new Uint8Array(await new Response(payload as ConstructorParameters<typeof Response>[0]).arrayBuffer())
  }
  // Read only through bodyBytes (to store it, and by writeReply), so it needs no body stream.
  return streamlessResponse(status, '', headers, bytes)
}

/** Puts a Web Response on the reply, replacing what the route set, and returns its body. */
async function writeReply(reply: FastifyReply, response: Response): Promise<Buffer | null> {
  for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name)
  reply.code(response.status)
  setWebHeaders((name, value) => reply.header(name, value), response.headers)
  const bytes = await bodyBytes(response)
  return bytes.byteLength === 0 ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function'
}

function isWebResponse(value: unknown): value is Response {
  return Object.prototype.toString.call(value) === '[object Response]'
}
