/**
 * The route's reply on Fastify, as `idem/fastify`'s `onSend` hook hands it to the
 * middleware, and the answers it puts on the reply for Fastify to send.
 */
import { wireValue } from '../../stored-response.js'
import type { FastifyReply } from 'fastify'
import { NO_BODY_STATUSES } from '../../../headers/no-body-statuses.js'
import type { HttpAnswer, HttpBody, RouteResult } from '../../exchange.js'
import { recordHeaders } from '../node/response.js'

/**
 * The route's reply as Fastify's `onSend` has it: its payload, sent as it is, with the
 * status and headers it had then (put back when something changed them since); or, for
 * a stream or a Web Response (read to store it), its status, headers and bytes.
 */
export type Payload =
  | { readonly payload: string | Uint8Array | null | undefined; readonly status: number; readonly headers: readonly string[] }
  | { readonly answer: HttpAnswer }

/**
 * The route's reply: Fastify's payload is text, bytes, a stream, a Web Response or
 * nothing. Its status and headers are taken at once, as the route answered with them.
 */
export async function routeReply(reply: FastifyReply, payload: unknown): Promise<RouteResult<Payload>> {
  let status = reply.statusCode
  const headers = recordHeaders(reply.getHeaders())
  if (payload === null || payload === undefined || typeof payload === 'string' || payload instanceof Uint8Array) {
    const body: HttpBody = payload ?? ''
    return { kind: 'reply', response: { payload, status, headers }, status, body, headers: (names) => picked(headers, names) }
  }
  // A stream or a Response is read whole to store it; the bytes read are what is sent.
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

/**
 * The route's own reply: its payload as it is, or what was read of it. `restore` puts
 * the status and headers it answered with back first: something failed after it, and
 * may have changed them on the way (Fastify's error handling sets its own).
 */
export function writePayload(reply: FastifyReply, response: Payload, restore: boolean): unknown {
  if ('answer' in response) return writeAnswer(reply, response.answer, true)
  if (!restore) return response.payload
  return writeAnswer(reply, { status: response.status, headers: response.headers, body: response.payload ?? '' }, true)
}

/**
 * Puts an answer on the reply and returns its body for Fastify to send. `replace` drops
 * what the route set first; otherwise (the route did not run) the headers set before it
 * (CORS, a request id) are kept, and the answer's own replace any of the same name.
 */
export function writeAnswer(reply: FastifyReply, answer: HttpAnswer, replace: boolean): Buffer | string | null {
  if (replace) for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name)
  reply.code(answer.status)
  // Fastify keeps one value a name: a repeated field is joined, as a list of values, but
  // Set-Cookie stays a list. Each value goes out as its bytes (`wireValue`).
  const fields = new Map<string, string[]>()
  const { headers } = answer
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const values = fields.get(headers[i]!)
    if (values === undefined) fields.set(headers[i]!, [wireValue(headers[i + 1]!)])
    else values.push(wireValue(headers[i + 1]!))
  }
  for (const [name, values] of fields) reply.header(name, name === 'set-cookie' ? values : values.join(', '))
  const { body } = answer
  if (NO_BODY_STATUSES.has(answer.status)) return null
  if (typeof body === 'string') return body === '' ? null : body
  return body.byteLength === 0 ? null : Buffer.from(body.buffer, body.byteOffset, body.byteLength)
}

// `reply.send` adds a charset to the content type of a string, and sends null as JSON
// ("null"): bytes go out as they are, and no body as nothing.
export function bufferOf(body: Buffer | string | null): Buffer | undefined {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : (body ?? undefined)
}

/** Whether a payload is a Web `Response` (from any realm). */
export function isWebResponse(value: unknown): value is Response {
  return Object.prototype.toString.call(value) === '[object Response]'
}
