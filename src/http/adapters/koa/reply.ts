/**
 * The route's reply on Koa, as `idem/koa` reads it from the context once the route has
 * run, and the answers idem puts there. Koa writes the response itself, after its
 * middleware has unwound (its `respond()`), from `ctx.status`, `ctx.body` and the
 * response's headers: nothing here writes Node's response. Mapping only: the middleware
 * (`handler.ts`) decides.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import type { Context } from 'koa'
import { NO_BODY_STATUSES } from '../../../headers/no-body-statuses.js'
import type { HttpAnswer, HttpBody, HttpRequest, RouteReply } from '../../exchange.js'
import { bytesOf } from '../node/response.js'
import { wireValue } from '../../stored-response.js'
import { captureResponse, recordHeaders, release } from '../node/response.js'
import { RouteHijackedError } from '../node/route-hijacked.js'

/**
 * The route's reply as Koa will send it: its status, its headers as they are now, and its
 * body made what Koa writes (an object as its JSON, a stream read whole, no body as Koa's
 * status text), put back on `ctx.body` as text or bytes, so that what is stored is what
 * goes out. The reply itself stays on the context: `response` is nothing.
 */
export async function koaReply(ctx: Context): Promise<RouteReply<null>> {
  const body = await settledBody(ctx)
  const headers = ctx.response.headers
  return { kind: 'reply', response: null, status: ctx.status, body, headers: (names) => recordHeaders(headers, names) }
}

// What Koa's respond() sends for ctx.body, as text or bytes; left on ctx.body.
async function settledBody(ctx: Context): Promise<HttpBody> {
  const { body } = ctx
  if (NO_BODY_STATUSES.has(ctx.status)) {
    // Koa sends no body with these, and drops the headers that describe one.
    ctx.body = null
    return ''
  }
  // Koa sends a Buffer as it is, and any other Uint8Array as JSON, like an object.
  if (typeof body === 'string' || Buffer.isBuffer(body)) return body
  if (body === null || body === undefined) return Reflect.get(ctx.response, '_explicitNullBody') === true ? explicitlyEmpty(ctx) : statusText(ctx)
  const settled = body instanceof Readable ? await readWhole(body) : isWebBody(body) ? Buffer.from(await webBytes(body)) : (JSON.stringify(body) ?? '')
  ctx.body = settled
  return settled
}

// `ctx.body = null` on a status that has a body: Koa sends nothing, without a Content-Type.
function explicitlyEmpty(ctx: Context): string {
  ctx.remove('Content-Type')
  ctx.remove('Transfer-Encoding')
  return ''
}

// No body: Koa sends the status's message (its number over HTTP/2) as text/plain.
function statusText(ctx: Context): string {
  const { status } = ctx
  const text = ctx.req.httpVersionMajor >= 2 ? String(status) : ctx.message || String(status)
  const message = ctx.res.statusMessage
  // Koa's setter makes a status nobody set 200 (Koa's own 404 is one): put it back.
  ctx.body = text
  ctx.status = status
  ctx.res.statusMessage = message
  ctx.type = 'text'
  return text
}

async function readWhole(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : (chunk as Buffer))
  return Buffer.concat(chunks)
}

/** The bodies Koa 3 streams from the Web's own types. */
type WebBody = Blob | ReadableStream | Response

function isWebBody(body: unknown): body is WebBody {
  return body instanceof Blob || body instanceof ReadableStream || body instanceof Response
}

function webBytes(body: WebBody): Promise<ArrayBuffer> {
  return body instanceof ReadableStream ? new Response(body).arrayBuffer() : body.arrayBuffer()
}

/**
 * Puts an answer of idem's own (a replay, a problem) on the context for Koa to send, so
 * that middleware around idem still sees and adds to it. Headers that earlier middleware
 * set stay; the answer's own replace any of the same name, repeated fields kept apart,
 * each value as its bytes (`wireValue`).
 * `closeConnection` when the request's upload was left unread (a 413).
 */
export function answerWith(ctx: Context, answer: HttpAnswer, closeConnection: boolean): void {
  const type = ctx.res.getHeader('content-type')
  const bytes = bytesOf(answer.body)
  // Koa frames a Buffer (Content-Length), and gives it a Content-Type of its own: taken back below.
  ctx.body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  // After the body, whose setter makes a status nobody set 200; a no-body status drops the body.
  ctx.status = answer.status
  if (type === undefined) ctx.remove('Content-Type')
  else ctx.res.setHeader('content-type', type)
  const { headers } = answer
  for (let i = 0; i < headers.length; i += 2) ctx.remove(headers[i]!)
  for (let i = 0; i + 1 < headers.length; i += 2) ctx.append(headers[i]!, wireValue(headers[i + 1]!))
  if (closeConnection) ctx.set('Connection', 'close')
}

/** Puts a response's headers back as `earlier` had them, dropping what was set since (by a route idem answers for). */
export function restoreHeaders(res: ServerResponse, earlier: OutgoingHttpHeaders): void {
  for (const name of res.getHeaderNames()) res.removeHeader(name)
  for (const [name, value] of Object.entries(earlier)) if (value !== undefined) res.setHeader(name, value)
}

/** A route's `ctx.respond`, watched while idem holds its key. */
export interface Takeover {
  /** Stops watching (at once, once): `ctx.respond` is the route's again; returns the refusal, if the route was refused. */
  end(): RouteHijackedError | undefined
}

/**
 * Refuses `ctx.respond = false` while the route runs. Koa would then send nothing, and the
 * route would write Node's response itself, around the context where idem reads its
 * answer, before its effects commit: the assignment throws `RouteHijackedError`, and
 * what the route still writes on `ctx.res` is held and dropped.
 */
export function refuseTakeover(ctx: Context, request: HttpRequest): Takeover {
  let refused: RouteHijackedError | undefined
  let respond = ctx.respond
  let ended = false
  Object.defineProperty(ctx, 'respond', {
    configurable: true,
    enumerable: true,
    get: () => respond,
    set(value: boolean | undefined) {
      if (value !== false) respond = value
      else {
        refused ??= hijacked(request)
        void captureResponse(ctx.res)
        throw refused
      }
    },
  })
  return {
    end() {
      if (ended) return refused
      ended = true
      Reflect.deleteProperty(ctx, 'respond')
      if (respond !== undefined) ctx.respond = respond
      release(ctx.res)
      return refused
    },
  }
}

function hijacked(request: HttpRequest): RouteHijackedError {
  return new RouteHijackedError(
    `idem: ${request.method} ${request.path} set ctx.respond = false while idem held its Idempotency-Key. Koa then sends nothing and the ` +
      'route writes the response itself, around ctx, where idem reads the answer to store it with its effects and holds it until they commit, ' +
      'so the assignment was refused: the transaction rolled back, nothing was stored and the client was answered 500 route-hijacked. ' +
      'Answer through ctx.body (a stream too), or leave the route unprotected (methods, routes, or mount idempotency() only where it protects).',
  )
}
