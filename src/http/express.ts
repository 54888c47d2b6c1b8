/**
 * `idem/express`: the Idempotency-Key middleware for Express 5. It converts to and
 * from the neutral handler (`idem/fetch`), which holds all the behaviour.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable, type ReadableOptions } from 'node:stream'
import type { NextFunction, Request as ExpressRequest, RequestHandler, Response as ExpressResponse } from 'express'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { discard } from '../core/result.js'
import { protectRequests, type RouteCalls } from './handler.js'
import { nodeBody, sendWebResponse, webHeaders, webRequest } from './node.js'
import type { IdempotencyContext, IdempotencyOptions } from './options.js'
import { problemResponse } from './problem.js'
import { streamlessResponse } from './stored-response.js'

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The held key and its transaction while idem protects the request; unset otherwise. */
      idem?: IdempotencyContext<unknown>
    }
  }
}

export type { IdempotencyContext, IdempotencyOptions } from './options.js'

// What `next` hands back when the request passed through: Express already owns it.
const PASSED = Symbol('passed through')
type Outcome = Response | typeof PASSED

/**
 * Express 5 middleware. Mount it before body parsers (`express.json()` and friends):
 * it reads the raw body for the fingerprint and puts the same bytes back for them. The
 * route handler finds the key and its transaction on `req.idem`; the response it
 * writes is held until the transaction commits. `scope` receives the Express request,
 * so it can read what authentication set on it.
 *
 * @example
 * app.use(idempotency({ store, scope: (_request, req) => req.get('x-account-id') ?? 'anonymous' }))
 * app.use(express.json())
 * app.post('/orders', async (req, res) => {
 *   const { tx } = req.idem as IdempotencyContext<PgClient>
 *   await tx.query('INSERT INTO orders (body) VALUES ($1)', [req.body])
 *   res.status(201).json({ ok: true })
 * })
 */
export function idempotency<Tx>(options: IdempotencyOptions<Tx, ExpressRequest>): RequestHandler {
  const { covers, protect } = protectRequests<Tx, ExpressRequest>(options)

  return function idempotency(req: ExpressRequest, res: ExpressResponse, next: NextFunction): void {
    if (!covers(req.method)) {
      next()
      return
    }
    // A body parser mounted earlier has read the stream; the parsed body is all there is.
    const parsedEarlier = req.readableEnded
    if (parsedEarlier && req.body === undefined && declaresBody(req)) {
      // Something read the body and kept nothing: the fingerprint would miss the payload.
      void sendWebResponse(res, problemResponse(new InvalidOptionError(UNREADABLE_BODY)), false).catch(next)
      return
    }
    const body = parsedEarlier ? undefined : nodeBody(req)
    let request: Request
    try {
      request = webRequest(req, req.originalUrl, body ?? parsedBody(req))
      if (parsedEarlier && isParsedObject(req.body)) request.headers.set('content-type', 'application/json')
    } catch (error) {
      next(error)
      return
    }

    // The client left before its route started: the claim is rolled back, nothing is sent.
    let clientLeft = false
    const route: RouteCalls<Tx> = {
      // Every answer goes out through sendWebResponse.
      writesBytes: true,
      pass: async () => {
        next()
        return PASSED as unknown as Response
      },
      run: async (bytes, idem) => {
        // Express's body parsers skip a request whose client has gone ("already
        // finished"), so a route started now would never see the body its key's
        // fingerprint covers, and could store what it made of nothing. The client left
        // while the key was being claimed (a long `wait`, say): roll back instead; its
        // retry runs the route with the body. (Mount the body parser right after the
        // middleware: a client that leaves during an async middleware in between is not
        // seen here.)
        if (body !== undefined && bytes.byteLength > 0 && clientGone(req)) {
          clientLeft = true
          return discard(streamlessResponse(499, '', new Headers(), new Uint8Array(0)))
        }
        if (body !== undefined) refill(req, bytes)
        req.idem = idem
        const response = capture(res)
        next()
        return response
      },
    }

    protect(request, req, route).then(
      (outcome: Outcome) => {
        if (outcome === PASSED) return undefined
        // Nobody is left to answer.
        if (clientLeft) return void res.destroy()
        return sendWebResponse(res, outcome, body?.unfinished() ?? false)
      },
      (error: unknown) => {
        // Express's error handlers answer. If the route already ran, its held response
        // is dropped: the transaction rolled back, so it must not be sent as a success.
        if (!res.headersSent && !res.writableEnded) next(error)
      },
    ).catch((error: unknown) => res.destroy(error as Error))
  }
}

// What Express's body parsers (on-finished) take for "the request is over".
function clientGone(req: IncomingMessage): boolean {
  return req.socket === null || req.socket.destroyed || !req.socket.readable
}

const UNREADABLE_BODY =
  'idempotency (express): the request body was read before the middleware and not kept on req.body; ' +
  'mount idempotency() before the middleware that reads it'

function declaresBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined
}

function isParsedObject(body: unknown): boolean {
  return body !== null && typeof body === 'object' && !(body instanceof Uint8Array)
}

// The body as a parser left it: bytes and text as they are, parsed objects as JSON
// (compared canonically, so key order still does not count).
function parsedBody(req: ExpressRequest): string | Uint8Array | null {
  const parsed: unknown = req.body
  if (parsed === undefined || parsed === null) return null
  if (typeof parsed === 'string' || parsed instanceof Uint8Array) return parsed
  return JSON.stringify(parsed)
}

/**
 * Makes a request whose body was read readable again, holding the same bytes, so the
 * body parsers mounted after the middleware work as usual. Node offers no public way
 * to rewind an IncomingMessage, so its Readable state is initialised afresh; the
 * request has been read to its end, so its socket is unaffected.
 */
function refill(req: IncomingMessage, bytes: Uint8Array): void {
  ;(Readable as unknown as (this: Readable, options?: ReadableOptions) => void).call(req)
  req.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  req.push(null)
}

type WriteCallback = (error?: Error | null) => void

/**
 * Holds what the route writes (status, headers, body) instead of sending it, and
 * resolves with it as a Web Response when the route ends the response. The real
 * methods are put back at that point, so the adapter can send the final answer.
 *
 * A client that goes away changes nothing here: the route's transaction must stay
 * open until the route has finished with it (a rollback while it still writes would
 * let those writes land outside any transaction). It commits as usual, and a retry
 * with the same key gets the stored response.
 */
function capture(res: ServerResponse): Promise<Response> {
  const original = { writeHead: res.writeHead, write: res.write, end: res.end, flushHeaders: res.flushHeaders }
  const chunks: Buffer[] = []
  return new Promise<Response>((resolve, reject) => {
    const restore = (): void => {
      Object.assign(res, original)
    }
    const collect = (chunk: unknown, encoding: unknown): void => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return
      if (typeof chunk === 'string') chunks.push(Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'))
      else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
    }
    res.writeHead = function writeHead(this: ServerResponse, status: number, ...rest: unknown[]) {
      res.statusCode = status
      if (typeof rest[0] === 'string') res.statusMessage = rest.shift() as string
      setHeadersFrom(res, rest[0])
      return this
    } as ServerResponse['writeHead']
    res.flushHeaders = () => {}
    res.write = function write(chunk: unknown, encoding?: unknown, callback?: unknown) {
      collect(chunk, encoding)
      const done = typeof encoding === 'function' ? encoding : callback
      if (typeof done === 'function') queueMicrotask(() => (done as WriteCallback)())
      return true
    } as ServerResponse['write']
    res.end = function end(this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) {
      collect(chunk, encoding)
      restore()
      const done = [chunk, encoding, callback].find((arg) => typeof arg === 'function')
      try {
        const bytes = new Uint8Array(Buffer.concat(chunks))
        resolve(streamlessResponse(res.statusCode, res.statusMessage ?? '', webHeaders(res.getHeaders()), bytes))
      } catch (error) {
        reject(error)
      }
      if (typeof done === 'function') queueMicrotask(() => (done as WriteCallback)())
      return this
    } as ServerResponse['end']
  })
}

// writeHead(status, headers) takes an object or a flat [name, value, ...] list.
function setHeadersFrom(res: ServerResponse, headers: unknown): void {
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) res.setHeader(String(headers[i]), headers[i + 1] as string)
  } else if (headers !== null && typeof headers === 'object') {
    for (const [name, value] of Object.entries(headers)) if (value !== undefined) res.setHeader(name, value as string | string[])
  }
}
