/**
 * Node's `ServerResponse` mapped to the middleware's exchange, shared by the Express,
 * Fastify and NestJS adapters (the request side is `node-request.ts`): the route's reply
 * held on the response (its headers stay there, in Node's own list) until it is sent,
 * answers written with `writeHead` and `end`. No Web `Response` or `Headers` is made.
 * Mapping only: no idempotency behaviour here.
 */
import type { ServerResponse } from 'node:http'
import { NO_BODY_STATUSES } from '../../../headers/no-body-statuses.js'
import type { HttpAnswer, HttpBody, RouteReply } from '../../exchange.js'
import { byteLength, wireValue } from '../../stored-response.js'

// A small body goes out as latin1 text (one byte per character, so any bytes survive):
// Node then sends headers and body in one write instead of a writev of two buffers. Never
// as UTF-8 text: Node would encode the header block with the body's encoding, and each
// header byte above 0x7F would go out as two.
const SMALL_BODY = 16 * 1024

/**
 * A body as bytes.
 * @example res.end(bytesOf(answer.body))
 */
export function bytesOf(body: HttpBody): Uint8Array {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : body
}

function endWith(res: ServerResponse, body: HttpBody): void {
  const bytes = bytesOf(body)
  if (bytes.byteLength === 0) res.end()
  else if (bytes.byteLength <= SMALL_BODY) res.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1'), 'latin1')
  else res.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
}

/**
 * Sends the route's reply that `captureResponse` held: its status and headers as the
 * route answered with them, put back on the response; its body goes out with its own
 * `Content-Length` (set, never removed: without it Node does not frame the body at all,
 * and a keep-alive client then cannot tell where the answer ends). The head is written
 * first, as `sendAnswer` writes a replay's: made inside `end`, Node would read a
 * `Content-Disposition` value's bytes as UTF-8, and the first answer would carry other
 * bytes than its replay.
 */
export function sendHeld(res: ServerResponse, body: HttpBody, closeConnection: boolean): void {
  const hold = unhold(res)
  if (hold?.answer !== undefined) restore(res, hold, hold.answer)
  if (closeConnection) res.setHeader('connection', 'close')
  if (NO_BODY_STATUSES.has(res.statusCode)) {
    if (res.hasHeader('content-length')) res.removeHeader('content-length')
    res.end()
    return
  }
  res.setHeader('content-length', byteLength(body))
  res.writeHead(res.statusCode)
  endWith(res, body)
}

/**
 * Writes an answer of idem's own to a Node response that has not started. Headers that
 * earlier middleware set (CORS, HSTS, a request id) are kept, as they would be without
 * idem; the answer's own replace any of the same name, repeated fields kept apart, each
 * value as its bytes (`wireValue`), and `Content-Length` is the body's own.
 */
export function sendAnswer(res: ServerResponse, answer: HttpAnswer, closeConnection: boolean): void {
  // A route still captured (it ran past its deadline, and idem answers for it) has
  // written nothing: the answer goes out through the response's own methods.
  release(res)
  const headers = answer.headers.slice()
  if (NO_BODY_STATUSES.has(answer.status)) {
    if (res.hasHeader('content-length')) res.removeHeader('content-length')
  } else headers.push('content-length', String(byteLength(answer.body)))
  if (closeConnection) headers.push('connection', 'close')
  // Not writeHead(status, list): once any header was set on the response, it sets each
  // field of the list over the last, and a repeated field (Set-Cookie) keeps one value.
  for (let i = 0; i < headers.length; i += 2) res.removeHeader(headers[i]!)
  for (let i = 0; i + 1 < headers.length; i += 2) res.appendHeader(headers[i]!, wireValue(headers[i + 1]!))
  res.writeHead(answer.status)
  if (NO_BODY_STATUSES.has(answer.status)) res.end()
  else endWith(res, answer.body)
}

/** The fields of a header record (lower-case names: Node's `getHeaders()`, Fastify's) whose names are in `names`, as a flat list. */
export function recordHeaders(headers: Readonly<Record<string, unknown>>, names?: ReadonlySet<string>): string[] {
  const list: string[] = []
  for (const name in headers) if (names === undefined || names.has(name)) pushField(list, name, headers[name])
  return list
}

function pushField(list: string[], name: string, value: unknown): void {
  if (Array.isArray(value)) for (const item of value) list.push(name, String(item))
  else if (value !== undefined && value !== null) list.push(name, String(value))
}

type WriteCallback = (error?: Error | null) => void

/** Told once when something answers a held response a second time: the status the route answered with, and the second answer's. */
export type SecondAnswer = (answered: number, second: number) => void

/** A response whose writes are held: its own methods, put back at the end, and what was written. */
interface Hold {
  readonly original: Pick<ServerResponse, 'writeHead' | 'write' | 'end' | 'flushHeaders'>
  readonly chunks: HttpBody[]
  resolve(reply: RouteReply<HttpBody>): void
  /** What the route answered, once it ended the response: it stays held until the adapter sends it. */
  answer?: HeldAnswer
  /** Told of the first answer written after the route's own (which is dropped); unset once told. */
  second: SecondAnswer | undefined
  /** Something wrote to the response after the route's answer (dropped). */
  overwritten: boolean
}

/** The route's answer as the response held it when the route ended it. */
interface HeldAnswer {
  readonly status: number
  readonly statusMessage: string
  /** Every header field then (lower-case names), its value as Node keeps it. */
  readonly headers: Readonly<Record<string, number | string | string[] | undefined>>
}

// The responses whose writes `captureResponse` holds. The methods put in place of the
// response's own are the same functions for every response (made once, here), so that
// holding a response costs no closures.
const holds = new WeakMap<ServerResponse, Hold>()

/**
 * Holds what is written to a Node response instead of sending it, and resolves with the
 * route's reply when the route ends the response: its status, body and headers as they
 * are then. The route's answer is THE answer from that point: the response stays held
 * until the adapter sends it (`sendHeld` the reply itself, `sendAnswer` idem's own),
 * and whatever is written to it meanwhile (an error handler's answer, after the route
 * threw) is dropped, `second` told of it once, and the status and headers the route
 * answered with are put back when it is sent. Until then the response says it has sent
 * nothing (`headersSent` false), so an error handler answers (dropped) rather than
 * destroying the connection, as Express's does when headers were sent.
 *
 * A client that goes away changes nothing here: the route's transaction must stay
 * open until the route has finished with it (a rollback while it still writes would
 * let those writes land outside any transaction). It commits as usual, and a retry
 * with the same key gets the stored response. A route that never ends the response is
 * given up on at its deadline (`deadlineMs`); `sendAnswer` then puts the methods
 * back before it sends idem's answer, and what the route writes later fails as a write
 * after the end does.
 */
export function captureResponse(res: ServerResponse, second?: SecondAnswer): Promise<RouteReply<HttpBody>> {
  return new Promise<RouteReply<HttpBody>>((resolve) => {
    const original = { writeHead: res.writeHead, write: res.write, end: res.end, flushHeaders: res.flushHeaders }
    holds.set(res, { original, chunks: [], resolve, second, overwritten: false })
    res.writeHead = heldWriteHead
    res.write = heldWrite
    res.end = heldEnd
    res.flushHeaders = heldFlushHeaders
  })
}

/** The status the route answered a held response with, once it has ended it; undefined before, or when nothing holds it. */
export function answeredStatus(res: ServerResponse): number | undefined {
  return holds.get(res)?.answer?.status
}

/**
 * Puts a held response's own methods back, dropping what was held: it is then written
 * as usual, with the status and headers it has now.
 */
export function release(res: ServerResponse): void {
  unhold(res)
}

function unhold(res: ServerResponse): Hold | undefined {
  const hold = holds.get(res)
  if (hold === undefined) return undefined
  holds.delete(res)
  Object.assign(res, hold.original)
  return hold
}

// The route's answer back on the response, as it was when the route ended it, when
// something wrote to it since (dropped), and may have changed its status and headers on
// the way (an error handler sets its own before it writes).
function restore(res: ServerResponse, hold: Hold, answer: HeldAnswer): void {
  if (!hold.overwritten && res.statusCode === answer.status) return
  res.statusCode = answer.status
  res.statusMessage = answer.statusMessage
  for (const name of res.getHeaderNames()) res.removeHeader(name)
  for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined) res.setHeader(name, value)
}

// Whether the route has answered a held response: what is written to it then is dropped.
function overwrites(hold: Hold | undefined): boolean {
  if (hold?.answer === undefined) return false
  hold.overwritten = true
  return true
}

const heldWriteHead = function writeHead(this: ServerResponse, status: number, ...rest: unknown[]) {
  if (overwrites(holds.get(this))) return this
  this.statusCode = status
  if (typeof rest[0] === 'string') this.statusMessage = rest.shift() as string
  setHeadersFrom(this, rest[0])
  return this
} as ServerResponse['writeHead']

const heldFlushHeaders = (): void => {}

const heldWrite = function write(this: ServerResponse, chunk: unknown, encoding?: unknown, callback?: unknown) {
  const hold = holds.get(this)
  if (hold !== undefined && !overwrites(hold)) collect(hold.chunks, chunk, encoding)
  const done = typeof encoding === 'function' ? encoding : callback
  if (typeof done === 'function') queueMicrotask(() => (done as WriteCallback)())
  return true
} as ServerResponse['write']

const heldEnd = function end(this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) {
  const hold = holds.get(this)
  const done = typeof chunk === 'function' ? chunk : typeof encoding === 'function' ? encoding : callback
  if (hold !== undefined) endHeld(this, hold, chunk, encoding)
  if (typeof done === 'function') queueMicrotask(() => (done as WriteCallback)())
  return this
} as ServerResponse['end']

// The route's end holds its answer; any later one is a second answer, dropped.
function endHeld(res: ServerResponse, hold: Hold, chunk: unknown, encoding: unknown): void {
  if (hold.answer !== undefined) {
    hold.overwritten = true
    const told = hold.second
    hold.second = undefined
    told?.(hold.answer.status, res.statusCode)
    return
  }
  collect(hold.chunks, chunk, encoding)
  const answer: HeldAnswer = { status: res.statusCode, statusMessage: res.statusMessage, headers: res.getHeaders() }
  hold.answer = answer
  hold.resolve(heldReply(answer, joined(hold.chunks)))
}

// What the route answered: its status and body, and its headers as they were then.
function heldReply(answer: HeldAnswer, body: HttpBody): RouteReply<HttpBody> {
  return { kind: 'reply', response: body, status: answer.status, body, headers: (names) => recordHeaders(answer.headers, names) }
}

function collect(chunks: HttpBody[], chunk: unknown, encoding: unknown): void {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return
  if (typeof chunk === 'string') {
    // Text as it is (the common case: one string, stored and sent as UTF-8).
    if (typeof encoding !== 'string' || UTF8.has(encoding)) chunks.push(chunk)
    else chunks.push(Buffer.from(chunk, encoding as BufferEncoding))
  } else if (chunk instanceof Uint8Array) chunks.push(chunk)
}

const UTF8 = new Set(['utf8', 'utf-8', 'UTF8', 'UTF-8'])

function joined(chunks: readonly HttpBody[]): HttpBody {
  if (chunks.length === 0) return ''
  if (chunks.length === 1) return chunks[0]!
  if (chunks.every((chunk) => typeof chunk === 'string')) return chunks.join('')
  return Buffer.concat(chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk)))
}

// writeHead(status, headers) takes an object or a flat [name, value, ...] list.
function setHeadersFrom(res: ServerResponse, headers: unknown): void {
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) res.setHeader(String(headers[i]), headers[i + 1] as string)
  } else if (headers !== null && typeof headers === 'object') {
    for (const [name, value] of Object.entries(headers)) if (value !== undefined) res.setHeader(name, value as string | string[])
  }
}
