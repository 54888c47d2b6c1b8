/**
 * Web-standard `Request` and `Response` mapped to the middleware's exchange, for the
 * Fetch and Hono adapters: a request's body read to its limit, the route's response
 * read for storing (a lightweight one of `@hono/node-server` without building it), and
 * idem's own answers as responses. Mapping only: no idempotency behaviour here.
 */
import { EMPTY_BODY, readSource, tooLarge } from '../../body.js'
import { NO_BODY_STATUSES } from '../../../headers/no-body-statuses.js'
import type { HttpAnswer, HttpBody, HttpRequest, RouteReply } from '../../exchange.js'
import { wireValue } from '../../stored-response.js'

/** A Web `Request` as the middleware reads it. */
export function webRequest(request: Request): HttpRequest {
  const { url } = request
  return {
    method: request.method,
    path: pathOf(url),
    query: queryOf(url),
    header: (name) => request.headers.get(name),
    body: (limit) => readBody(request, limit),
  }
}

/**
 * The route's Web `Response` with its body read for storing: the response itself is sent,
 * unread when its body could be had without reading it (`@hono/node-server`'s
 * lightweight responses), else a copy carrying the bytes read.
 */
export async function webReply(response: Response): Promise<RouteReply<Response>> {
  const light = lightweightBody(response)
  const body: HttpBody = light ?? new Uint8Array(await response.arrayBuffer())
  const sent = light === undefined ? new Response(sentBody(response.status, body), { status: response.status, statusText: response.statusText, headers: response.headers }) : response
  return { kind: 'reply', response: sent, status: response.status, body, headers: (names) => headerList(response.headers, names) }
}

// Iterating Headers yields lower-case names, and each Set-Cookie field on its own.
function headerList(headers: Headers, names: ReadonlySet<string>): string[] {
  const list: string[] = []
  for (const [name, value] of headers) if (names.has(name)) list.push(name, value)
  return list
}

/** An answer of idem's own as a Web `Response`: each header value as its bytes, ByteStrings (`wireValue`). */
export function webResponse(answer: HttpAnswer): Response {
  const headers = new Headers()
  const list = answer.headers
  for (let i = 0; i + 1 < list.length; i += 2) headers.append(list[i]!, wireValue(list[i + 1]!))
  return new Response(sentBody(answer.status, answer.body), { status: answer.status, headers })
}

// `new Response(body, { status })` refuses a body with a no-body status (204, 304).
function sentBody(status: number, body: HttpBody): HttpBody | null {
  if (NO_BODY_STATUSES.has(status)) return null
  return typeof body === 'string' ? (body === '' ? null : body) : body.byteLength === 0 ? null : body
}

/** The path of a request URL, without parsing the whole URL on the hot path. */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  let end = url.length
  const query = url.indexOf('?', start)
  if (query !== -1) end = query
  const hash = url.indexOf('#', start)
  if (hash !== -1 && hash < end) end = hash
  return url.slice(start, end)
}

/** The query string of a URL, without `?` (empty when there is none). */
function queryOf(url: string): string {
  const hash = url.indexOf('#')
  const end = hash === -1 ? url.length : hash
  const start = url.indexOf('?')
  return start === -1 || start > end ? '' : url.slice(start + 1, end)
}

/** A copy of `request` carrying `body`, the bytes already read from it. */
export function withRequestBody(request: Request, body: Uint8Array): Request {
  // From its parts rather than `new Request(request, …)`: runtimes with lazy requests
  // (such as @hono/node-server's) then need not build a full copy of the original first.
  // No `signal`: a client that disconnects must not cut a protected route short (its
  // outcome is what the retry will replay), and following the signal cost ~35 µs a request.
  return new Request(request.url, { method: request.method, headers: request.headers, body })
}

/**
 * Reads a Web request's body into memory, at most `limit` bytes (see `readSource`). A
 * declared length within the limit is read whole, which runtimes do faster than chunk
 * by chunk.
 * @throws BodyTooLargeError
 */
async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    if (Number(declared) > limit) throw tooLarge(limit)
    // A server holds the client to the declared length; a hand-made Request can declare
    // less than it carries, so the size is checked again.
    const body = new Uint8Array(await request.arrayBuffer())
    if (body.byteLength > limit) throw tooLarge(limit)
    return body
  }
  if (request.body === null) return EMPTY_BODY
  const reader = request.body.getReader()
  return readSource(
    {
      read: async () => {
        const { done, value } = await reader.read()
        return done ? undefined : value
      },
      cancel: () => {
        reader.cancel().catch(() => {})
      },
    },
    limit,
  )
}

// The body of a response made by `@hono/node-server`'s lightweight `Response`, read
// without materialising it. That server replaces the global `Response` with a class
// that keeps `[status, body, headers]` under a private symbol and only builds Node's
// (undici) Response when something reads it; reading the body the standard way costs
// a Response, a ReadableStream and a stream read, about 70 µs a request, and pushes the
// server off its fast path for writing the answer. Nothing here is public API of that
// server, so every assumption is checked, and any other response gets `undefined`: the
// caller then reads the body the standard way.

// The server's symbol, found on the first lightweight response seen.
let cacheSymbol: symbol | undefined

/**
 * The body of a lightweight response whose body is text or bytes; `undefined` for any other response.
 * @example const body = lightweightBody(response) ?? new Uint8Array(await response.arrayBuffer())
 */
export function lightweightBody(response: Response): HttpBody | undefined {
  if (cacheSymbol === undefined) {
    cacheSymbol = Object.getOwnPropertySymbols(response).find((symbol) => symbol.description === 'cache')
    if (cacheSymbol === undefined) return undefined
  }
  const cache: unknown = Reflect.get(response, cacheSymbol)
  if (!Array.isArray(cache) || cache.length !== 3 || cache[0] !== response.status) return undefined
  const body: unknown = cache[1]
  if (body === null) return ''
  if (typeof body === 'string' || body instanceof Uint8Array) return body
  return undefined // a stream or a Blob: only the standard reader gets it whole
}
