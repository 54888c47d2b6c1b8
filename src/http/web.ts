/**
 * Web-standard `Request` and `Response` mapped to the middleware's exchange, for the
 * Fetch and Hono adapters. Mapping only: no idempotency behaviour here.
 */
import { readBody } from './body.js'
import { NO_BODY_STATUSES } from '../headers/no-body-statuses.js'
import type { HttpAnswer, HttpBody, HttpRequest, RouteReply } from './exchange.js'
import { wireValue } from './header-field.js'
import { lightweightBody } from './lightweight-response.js'

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
