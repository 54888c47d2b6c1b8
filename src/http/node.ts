/**
 * Node's `http` objects mapped to the middleware's exchange, shared by the Express,
 * Fastify and NestJS adapters: the request read from `IncomingMessage` as it is, the
 * route's reply held on the `ServerResponse` (its headers stay there, in Node's own
 * list), answers written with `writeHead` and `end`. No Web `Request`, `Response` or
 * `Headers` is made. Mapping only: no idempotency behaviour here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { NO_BODY_STATUSES } from '../headers/no-body-statuses.js'
import { EMPTY_BODY, readSource, tooLarge, type BodySource } from './body.js'
import { byteLength, bytesOf, type HttpAnswer, type HttpBody, type HttpRequest, type RouteReply } from './exchange.js'
import { wireValue } from './header-field.js'

/** A Node stream as a `BodySource`, and whether reading it was started but not finished. */
export interface NodeBody {
  source: BodySource
  /**
   * True when reading began and stopped before the end (a 413). The rest of the upload
   * is then neither read nor discarded, so the connection must close after the answer.
   */
  unfinished(): boolean
}

/**
 * Reads a Node stream one chunk at a time, on demand: nothing is read until the
 * middleware asks, so a request it lets through keeps its body for the framework's
 * own parsers. `cancel` stops reading without destroying the socket, so the answer
 * still goes out. Its listeners are removed once done, so whoever reads the stream
 * next has it to themselves.
 */
export function nodeBody(stream: Readable): NodeBody {
  let started = false
  let ended = false
  let failed: Error | undefined
  const queue: Uint8Array[] = []
  let waiting: { resolve(chunk: Uint8Array | undefined): void; reject(error: Error): void } | undefined

  const onData = (chunk: Buffer | string): void => {
    stream.pause()
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    if (waiting === undefined) queue.push(bytes)
    else take().resolve(bytes)
  }
  const onEnd = (): void => {
    ended = true
    detach()
    waiting && take().resolve(undefined)
  }
  const onError = (error: Error): void => {
    failed = error
    detach()
    waiting && take().reject(error)
  }
  const take = (): NonNullable<typeof waiting> => {
    const current = waiting!
    waiting = undefined
    return current
  }
  const detach = (): void => {
    stream.off('data', onData)
    stream.off('end', onEnd)
    stream.off('error', onError)
  }

  const source: BodySource = {
    read() {
      const queued = queue.shift()
      if (queued !== undefined) return Promise.resolve(queued)
      if (ended) return Promise.resolve(undefined)
      if (failed !== undefined) return Promise.reject(failed)
      const next = new Promise<Uint8Array | undefined>((resolve, reject) => (waiting = { resolve, reject }))
      if (started) stream.resume()
      else {
        started = true
        stream.on('data', onData)
        stream.on('end', onEnd)
        stream.on('error', onError)
      }
      return next
    },
    cancel() {
      detach()
      stream.pause()
    },
  }
  return { source, unfinished: () => started && !ended }
}

/** What a Node request's body is: its stream (not read yet), what a parser left of it (text or bytes), or nothing. */
export type NodeRequestBody = NodeBody | string | Uint8Array | null

/**
 * A Node request as the middleware reads it. `url` is the path and query as the
 * framework sees them; `contentType`, when given, stands for the request's own (a body
 * a parser turned into an object is fingerprinted as JSON). A body a parser left (text
 * or bytes, not the stream) has no `Content-Encoding` any more: the parsers that hand
 * one on (Express's, which Nest uses too) have decoded it. Header values are Node's:
 * repeated fields joined with `, `, so two `Idempotency-Key` fields arrive as a list,
 * which the middleware rejects.
 */
export function nodeRequest(req: IncomingMessage, url: string, body: NodeRequestBody, contentType?: string): HttpRequest {
  const method = req.method ?? 'GET'
  const target = url.startsWith('/') ? url : `/${url}`
  const hash = target.indexOf('#')
  const end = hash === -1 ? target.length : hash
  const mark = target.indexOf('?')
  const query = mark === -1 || mark > end ? -1 : mark
  const headers = req.headers
  const parsed = typeof body === 'string' || body instanceof Uint8Array
  return {
    method,
    path: target.slice(0, query === -1 ? end : query),
    query: query === -1 ? '' : target.slice(query + 1, end),
    header(name) {
      if (name === 'content-type' && contentType !== undefined) return contentType
      if (name === 'content-encoding' && parsed) return null
      const value = headers[name]
      if (value === undefined) return null
      return typeof value === 'string' ? value : value.join(', ')
    },
    async body(limit) {
      if (method === 'GET' || method === 'HEAD' || body === null) return EMPTY_BODY
      const declared = headers['content-length']
      if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit)
      if (typeof body === 'object' && 'source' in body) return readSource(body.source, limit)
      const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body
      if (bytes.byteLength > limit) throw tooLarge(limit)
      return bytes
    },
  }
}

// A small body goes out as latin1 text (one byte per character, so any bytes survive):
// Node then sends headers and body in one write instead of a writev of two buffers. Never
// as UTF-8 text: Node would encode the header block with the body's encoding, and each
// header byte above 0x7F would go out as two.
const SMALL_BODY = 16 * 1024

function endWith(res: ServerResponse, body: HttpBody): void {
  const bytes = bytesOf(body)
  if (bytes.byteLength === 0) res.end()
  else if (bytes.byteLength <= SMALL_BODY) res.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1'), 'latin1')
  else res.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
}

/**
 * Sends the route's reply that `captureResponse` held: its status and headers are on the
 * response already; its body goes out with its own `Content-Length` (set, never removed:
 * without it Node does not frame the body at all, and a keep-alive client then cannot
 * tell where the answer ends). The head is written first, as `sendAnswer` writes a
 * replay's: made inside `end`, Node would read a `Content-Disposition` value's bytes as
 * UTF-8, and the first answer would carry other bytes than its replay.
 */
export function sendHeld(res: ServerResponse, body: HttpBody, closeConnection: boolean): void {
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

/** The header fields set on a Node response whose names are in `names`, as a flat list, each repeated field on its own. */
export function responseHeaders(res: ServerResponse, names: ReadonlySet<string>): string[] {
  const list: string[] = []
  for (const name of res.getHeaderNames()) if (names.has(name)) pushField(list, name, res.getHeader(name))
  return list
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

/** True when a Node request says it carries a body (a length above 0, or chunked). */
export function declaresBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined
}

/** True for a body a parser turned into an object (JSON, a form), not text or bytes. */
export function isParsedObject(body: unknown): boolean {
  return body !== null && typeof body === 'object' && !(body instanceof Uint8Array)
}

/**
 * A body as a parser left it (`req.body`): bytes and text as they are, parsed objects as
 * JSON (compared canonically, so key order still does not count), nothing as null.
 */
export function parsedBody(parsed: unknown): string | Uint8Array | null {
  if (parsed === undefined || parsed === null) return null
  if (typeof parsed === 'string' || parsed instanceof Uint8Array) return parsed
  try {
    return JSON.stringify(parsed)
  } catch (error) {
    // Nesting deeper than the stack: the same text, made without recursion.
    if (error instanceof RangeError) return jsonText(parsed)
    throw error
  }
}

/**
 * `JSON.stringify` without recursion: a client can nest a parsed body deeper than the
 * stack goes (`[[[[…]]]]` 60,000 deep parses, and then JSON.stringify throws), and the
 * fingerprint must still be made from it rather than answer 500 (`parsedBody` falls back
 * on it then). Same text as
 * JSON.stringify for what a body parser produces (plain objects, arrays, strings,
 * numbers, booleans, null); `toJSON` (Dates, Buffers) is honoured one level at a time.
 */
export function jsonText(value: unknown): string {
  const out: string[] = []
  // Work items: a value to write, or literal text (separators, closing brackets).
  const stack: Array<{ value: unknown; inArray: boolean } | string> = [{ value, inArray: false }]
  while (stack.length > 0) {
    const item = stack.pop()!
    if (typeof item === 'string') {
      out.push(item)
      continue
    }
    let current = item.value
    if (current !== null && typeof current === 'object' && typeof (current as { toJSON?: unknown }).toJSON === 'function') {
      current = (current as { toJSON(): unknown }).toJSON()
    }
    if (current === null || typeof current !== 'object') {
      const text = JSON.stringify(current)
      // undefined, functions and symbols: null inside an array, as JSON.stringify writes them.
      out.push(text === undefined ? 'null' : text)
      continue
    }
    const pending: Array<{ value: unknown; inArray: boolean } | string> = []
    if (Array.isArray(current)) {
      pending.push('[')
      current.forEach((element, i) => {
        if (i > 0) pending.push(',')
        pending.push({ value: element, inArray: true })
      })
      pending.push(']')
    } else {
      pending.push('{')
      let first = true
      for (const [key, member] of Object.entries(current)) {
        if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue
        pending.push(`${first ? '' : ','}${JSON.stringify(key)}:`)
        pending.push({ value: member, inArray: false })
        first = false
      }
      pending.push('}')
    }
    for (let i = pending.length - 1; i >= 0; i--) stack.push(pending[i]!)
  }
  return out.join('')
}

/**
 * Makes a request whose body was read readable again, holding the same bytes, so the
 * body parsers mounted after the middleware work as usual. Node offers no public way
 * to rewind an IncomingMessage, so its Readable state is initialised afresh; the
 * request has been read to its end, so its socket is unaffected.
 */
export function refillRequest(req: IncomingMessage, bytes: Uint8Array): void {
  Reflect.apply(Readable, req, [])
  req.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  req.push(null)
}

type WriteCallback = (error?: Error | null) => void

/** A response whose writes are held: its own methods, put back at the end, and what was written. */
interface Hold {
  readonly original: Pick<ServerResponse, 'writeHead' | 'write' | 'end' | 'flushHeaders'>
  readonly chunks: HttpBody[]
  resolve(reply: RouteReply<HttpBody>): void
  reject(error: unknown): void
}

// The responses whose writes `captureResponse` holds. The methods put in place of the
// response's own are the same functions for every response (made once, here), so that
// holding a response costs no closures.
const holds = new WeakMap<ServerResponse, Hold>()

/**
 * Holds what is written to a Node response instead of sending it, and resolves with the
 * route's reply when the response is ended: its status and body, its headers where the
 * route set them, on the response (`responseHeaders` reads them). The real methods are
 * put back at that point, so the adapter can send the final answer (`sendHeld` the
 * reply itself, `sendAnswer` idem's own).
 *
 * A client that goes away changes nothing here: the route's transaction must stay
 * open until the route has finished with it (a rollback while it still writes would
 * let those writes land outside any transaction). It commits as usual, and a retry
 * with the same key gets the stored response. A route that never ends the response is
 * given up on at its deadline (`deadlineMs`); `sendAnswer` then puts the methods
 * back before it sends idem's answer, and what the route writes later fails as a write
 * after the end does.
 */
export function captureResponse(res: ServerResponse): Promise<RouteReply<HttpBody>> {
  return new Promise<RouteReply<HttpBody>>((resolve, reject) => {
    const original = { writeHead: res.writeHead, write: res.write, end: res.end, flushHeaders: res.flushHeaders }
    holds.set(res, { original, chunks: [], resolve, reject })
    res.writeHead = heldWriteHead
    res.write = heldWrite
    res.end = heldEnd
    res.flushHeaders = heldFlushHeaders
  })
}

// Puts a held response's own methods back; it is then written as usual.
function release(res: ServerResponse): Hold | undefined {
  const hold = holds.get(res)
  if (hold === undefined) return undefined
  holds.delete(res)
  Object.assign(res, hold.original)
  return hold
}

const heldWriteHead = function writeHead(this: ServerResponse, status: number, ...rest: unknown[]) {
  this.statusCode = status
  if (typeof rest[0] === 'string') this.statusMessage = rest.shift() as string
  setHeadersFrom(this, rest[0])
  return this
} as ServerResponse['writeHead']

const heldFlushHeaders = (): void => {}

const heldWrite = function write(this: ServerResponse, chunk: unknown, encoding?: unknown, callback?: unknown) {
  const hold = holds.get(this)
  if (hold !== undefined) collect(hold.chunks, chunk, encoding)
  const done = typeof encoding === 'function' ? encoding : callback
  if (typeof done === 'function') queueMicrotask(() => (done as WriteCallback)())
  return true
} as ServerResponse['write']

const heldEnd = function end(this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) {
  const hold = release(this)
  const done = typeof chunk === 'function' ? chunk : typeof encoding === 'function' ? encoding : callback
  if (hold !== undefined) {
    collect(hold.chunks, chunk, encoding)
    try {
      hold.resolve(heldReply(this, joined(hold.chunks)))
    } catch (error) {
      hold.reject(error)
    }
  }
  if (typeof done === 'function') queueMicrotask(() => (done as WriteCallback)())
  return this
} as ServerResponse['end']

// What the route wrote: its status and body; its headers are on the response.
function heldReply(res: ServerResponse, body: HttpBody): RouteReply<HttpBody> {
  return { kind: 'reply', response: body, status: res.statusCode, body, headers: (names) => responseHeaders(res, names) }
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
