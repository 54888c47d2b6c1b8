/**
 * Node's `ServerResponse` mapped to the middleware's exchange for Express, Fastify, Koa
 * and NestJS (the request: `request.ts`; idem's own answers: `answer.ts`): the route's
 * reply held on the response until it is sent. Mapping only: no idempotency behaviour.
 * Lean, as every protected request runs it: held methods made once, a hold one object of
 * one shape, a one-chunk body kept as given. Adding a property to an Express response is
 * dear (Express sets its prototype, and V8 then makes a hidden class per property
 * added): three methods are added, never put back (released, they hand calls on), and
 * `flushHeaders` is Node's (it calls the held `writeHead`, and writes no byte). They go
 * on the response, not its prototype: a mounted sub-app sets another, and an earlier
 * wrapper (on-headers) must stay behind them.
 */
import type { ServerResponse } from 'node:http'
import { NO_BODY_STATUSES } from '../../../headers/no-body-statuses.js'
import { byteLength } from '../../stored-response.js'
import type { HttpBody, RouteReply } from '../../exchange.js'

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

// `length` is the body's byte length: a text body as long as its characters is ASCII,
// the same bytes in latin1, sent as it is (no copy of it as bytes, nor back as text).
export function endWith(res: ServerResponse, end: ServerResponse['end'], body: HttpBody, length: number): void {
  if (length === 0) Reflect.apply(end, res, [])
  else if (typeof body === 'string' && body.length === length) Reflect.apply(end, res, [body, 'latin1'])
  else if (length <= SMALL_BODY) Reflect.apply(end, res, [bufferOf(bytesOf(body)).toString('latin1'), 'latin1'])
  else Reflect.apply(end, res, [bufferOf(bytesOf(body))])
}

const bufferOf = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

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
  const own = hold ?? res
  if (hold?.answer !== undefined) restore(res, hold, hold.answer)
  if (closeConnection) res.setHeader('connection', 'close')
  const status = hold?.answer?.status ?? res.statusCode
  if (NO_BODY_STATUSES.has(status)) {
    if (res.hasHeader('content-length')) res.removeHeader('content-length')
    Reflect.apply(own.end, res, [])
    return
  }
  const length = byteLength(body)
  res.setHeader('content-length', length)
  Reflect.apply(own.writeHead, res, [status])
  endWith(res, own.end, body, length)
}

/** Told once when something answers a held response a second time: the status the route answered with, and the second answer's. */
export type SecondAnswer = (answered: number, second: number) => void

type WriteCallback = (error?: Error | null) => void
type WriteHead = ServerResponse['writeHead']
type End = ServerResponse['end']

/** The methods a hold stands in for, and that write a response once released. */
export type Writes = Readonly<Pick<ServerResponse, 'writeHead' | 'write' | 'end'>>

/** A response whose writes are held: the methods it stands in for, and what was written. */
class Hold implements Writes {
  readonly writeHead: WriteHead
  readonly write: ServerResponse['write']
  readonly end: End
  /** The chunks written: the first, and the ones after it if any. */
  first: HttpBody | undefined = undefined
  rest: HttpBody[] | undefined = undefined
  /** What the route answered, once it ended the response: held until the adapter sends it. */
  answer: HeldReply | undefined = undefined
  /** Something wrote to the response after the route's answer (dropped). */
  overwritten = false
  /** Sent or given up: every call goes to the methods the hold stands in for. */
  released = false
  /** The methods it stands in for are the prototype's: once released, it is let go. */
  readonly inherited: boolean

  // `second`: told of the first answer written after the route's own; unset once told.
  // Ours on the response (held before, and let go) stand for the prototype's.
  constructor(
    writes: Writes,
    proto: Writes,
    readonly resolve: (reply: RouteReply<HttpBody>) => void,
    public second: SecondAnswer | undefined,
  ) {
    this.writeHead = writes.writeHead === heldWriteHead ? proto.writeHead : writes.writeHead
    this.write = writes.write === heldWrite ? proto.write : writes.write
    this.end = writes.end === heldEnd ? proto.end : writes.end
    this.inherited = this.writeHead === proto.writeHead && this.write === proto.write && this.end === proto.end
  }
}

// Each held response's latest hold; a released one stays only when it stands in for a
// wrapper of the response's own (V8's collector pays for each entry a WeakMap keeps).
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
 * given up on at its deadline (`deadlineMs`); `sendAnswer` then releases it before it
 * sends idem's answer, and what the route writes later fails as a write after the end
 * does.
 * @example const reply = captureResponse(res, (answered, second) => told(answered, second))
 */
export function captureResponse(res: ServerResponse, second?: SecondAnswer): Promise<RouteReply<HttpBody>> {
  return new Promise<RouteReply<HttpBody>>((resolve) => {
    // Held before: the methods that hold stood in for, and ours back in front.
    const before = holds.get(res)
    holds.set(res, new Hold(before ?? res, protoOf(res), resolve, second))
    if (before === undefined || res.writeHead !== heldWriteHead) res.writeHead = heldWriteHead
    if (before === undefined || res.write !== heldWrite) res.write = heldWrite
    if (before === undefined || res.end !== heldEnd) res.end = heldEnd
  })
}

/** The status the route answered a held response with, once it has ended it; undefined before, once released, or when nothing holds it. */
export function answeredStatus(res: ServerResponse): number | undefined {
  const held = holds.get(res)
  return held === undefined || held.released ? undefined : held.answer?.status
}

// Releases a held response; the hold, or undefined when nothing holds it.
function unhold(res: ServerResponse): Hold | undefined {
  const held = holds.get(res)
  if (held === undefined || held.released) return undefined
  held.released = true
  if (held.inherited) holds.delete(res)
  return held
}

// A response's prototype, where the methods a hold let go stood in for are found.
function protoOf(res: ServerResponse): Writes {
  return Object.getPrototypeOf(res)
}

// The route's answer back on the response when something wrote to it since (dropped),
// and may have changed its status and headers (an error handler sets its own first).
function restore(res: ServerResponse, held: Hold, answer: HeldReply): void {
  if (!held.overwritten && res.statusCode === answer.status) return
  res.statusCode = answer.status
  res.statusMessage = answer.statusMessage
  for (const name of res.getHeaderNames()) res.removeHeader(name)
  for (const [name, value] of Object.entries(answer.fields)) if (value !== undefined) res.setHeader(name, value)
}

// Whether the route has answered a held response: what is written to it then is dropped.
function overwrites(held: Hold): boolean {
  if (held.answer === undefined) return false
  held.overwritten = true
  return true
}

const heldWriteHead = function writeHead(this: ServerResponse, status: number, reason?: unknown, headers?: unknown) {
  const held = holds.get(this)
  if (held === undefined) return Reflect.apply(protoOf(this).writeHead, this, arguments)
  if (held.released) return Reflect.apply(held.writeHead, this, arguments)
  if (overwrites(held)) return this
  this.statusCode = status
  if (typeof reason === 'string') this.statusMessage = reason
  setHeadersFrom(this, typeof reason === 'string' ? headers : reason)
  return this
} as WriteHead

const heldWrite = function write(this: ServerResponse, chunk: unknown, encoding?: unknown, callback?: unknown) {
  const held = holds.get(this)
  if (held === undefined) return Reflect.apply(protoOf(this).write, this, arguments)
  if (held.released) return Reflect.apply(held.write, this, arguments)
  if (!overwrites(held)) collect(held, chunk, encoding)
  const done = typeof encoding === 'function' ? encoding : callback
  if (typeof done === 'function') queueMicrotask(() => (done as WriteCallback)())
  return true
} as ServerResponse['write']

const heldEnd = function end(this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) {
  const held = holds.get(this)
  if (held === undefined) return Reflect.apply(protoOf(this).end, this, arguments)
  if (held.released) return Reflect.apply(held.end, this, arguments)
  const done = typeof chunk === 'function' ? chunk : typeof encoding === 'function' ? encoding : callback
  endHeld(this, held, chunk, encoding)
  if (typeof done === 'function') queueMicrotask(() => (done as WriteCallback)())
  return this
} as End

// The route's end holds its answer; any later one is a second answer, dropped.
function endHeld(res: ServerResponse, held: Hold, chunk: unknown, encoding: unknown): void {
  if (held.answer !== undefined) {
    held.overwritten = true
    const told = held.second
    held.second = undefined
    told?.(held.answer.status, res.statusCode)
    return
  }
  collect(held, chunk, encoding)
  held.answer = new HeldReply(res.statusCode, res.statusMessage, res.getHeaders(), joined(held))
  held.resolve(held.answer)
}

// What the route answered: its status, body, and header fields (lower-case names, as Node keeps them) as they were then.
class HeldReply implements RouteReply<HttpBody> {
  readonly kind = 'reply'
  readonly response: HttpBody

  constructor(
    readonly status: number,
    readonly statusMessage: string,
    readonly fields: Readonly<Record<string, number | string | string[] | undefined>>,
    readonly body: HttpBody,
  ) {
    this.response = body
  }

  headers(names: ReadonlySet<string>): string[] {
    return recordHeaders(this.fields, names)
  }
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

function collect(held: Hold, chunk: unknown, encoding: unknown): void {
  let body: HttpBody
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return
  if (typeof chunk === 'string') {
    // Text as it is (the common case: one string, stored and sent as UTF-8).
    body = typeof encoding !== 'string' || UTF8.has(encoding) ? chunk : Buffer.from(chunk, encoding as BufferEncoding)
  } else if (chunk instanceof Uint8Array) body = chunk
  else return
  if (held.first === undefined) held.first = body
  else (held.rest ??= []).push(body)
}

const UTF8 = new Set(['utf8', 'utf-8', 'UTF8', 'UTF-8'])

function joined(held: Hold): HttpBody {
  if (held.rest === undefined) return held.first ?? ''
  const chunks = [held.first!, ...held.rest]
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

/**
 * Releases a held response, dropping what was held: it is then written as usual, with
 * the status and headers it has now, through the methods this returns (the ones the
 * hold stood in for: a wrapper put on the response after the hold is passed by).
 * @example const { writeHead } = release(res)
 */
export function release(res: ServerResponse): Writes {
  return unhold(res) ?? res
}
