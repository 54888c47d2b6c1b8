/**
 * Conversions between Node's `http` objects and Web-standard Request/Response, shared
 * by the Express, Fastify and NestJS adapters. Mapping only: no idempotency behaviour here.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http'
import { Readable, type ReadableOptions } from 'node:stream'
import { withBodySource, type BodySource } from './body.js'
import { bodyBytes, streamlessResponse } from './stored-response.js'

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

/**
 * The Web `Request` for a Node request. Headers are copied field by field from
 * `rawHeaders`, so two `Idempotency-Key` fields arrive as a list, which the middleware
 * rejects. `url` is the path and query as the framework sees them. A `NodeBody` is
 * attached as the request's `BodySource` (the Request itself then has no body stream).
 */
export function webRequest(req: IncomingMessage, url: string, body: NodeBody | string | Uint8Array | null): Request {
  const headers = new Headers()
  const raw = req.rawHeaders
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!)
  const method = req.method ?? 'GET'
  const bodyAllowed = method !== 'GET' && method !== 'HEAD'
  const init: RequestInit = { method, headers }
  if (bodyAllowed && (typeof body === 'string' || body instanceof Uint8Array)) init.body = body
  const path = url.startsWith('/') ? url : `/${url}`
  const host = req.headers.host
  let request: Request
  try {
    request = new Request(`http://${host !== undefined && AUTHORITY.test(host) ? host : 'localhost'}${path}`, init)
  } catch (error) {
    // A Host that passes the pattern but no URL parser (a port past 65535): the path is
    // what the middleware matches, so it stands on localhost. (Parsing first to check
    // would parse every URL twice.)
    if (!(error instanceof TypeError)) throw error
    request = new Request(`http://localhost${path}`, init)
  }
  return bodyAllowed && body !== null && typeof body === 'object' && 'source' in body ? withBodySource(request, body.source) : request
}

// A host name or address with an optional port, nothing else: a Host such as "a?" or
// "a/b" would otherwise move the real path into the query and dodge the `routes` match.
const AUTHORITY = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

/** Node's outgoing headers (`res.getHeaders()`) as Web `Headers`, repeated fields kept apart. */
export function webHeaders(headers: OutgoingHttpHeaders): Headers {
  const result = new Headers()
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const item of value) result.append(name, item)
    else result.append(name, String(value))
  }
  return result
}

const SMALL_BODY = 16 * 1024
// Statuses whose answers carry no body and may not declare one (RFC 9110 §8.6).
const NO_BODY_STATUSES = new Set([101, 103, 204, 205, 304])

/**
 * Writes a Web `Response` to a Node response that has not started. Headers that earlier
 * middleware set (CORS, HSTS, a request id) are kept, as they would be without idem;
 * the response's own headers are added and replace any of the same name, and
 * `Content-Length` is the body's own.
 */
export async function sendWebResponse(res: ServerResponse, response: Response, closeConnection: boolean): Promise<void> {
  // A route still captured (it ran past its deadline, and idem answers for it) has
  // written nothing: the answer goes out through the response's own methods.
  captured.get(res)?.()
  res.statusCode = response.status
  if (response.statusText !== '') res.statusMessage = response.statusText
  setWebHeaders((name, value) => res.setHeader(name, value), response.headers)
  if (closeConnection) res.setHeader('connection', 'close')
  const bytes = await bodyBytes(response)
  // Set, never removed: removing Content-Length tells Node not to frame the body at
  // all, and a keep-alive client then cannot tell where the answer ends.
  if (NO_BODY_STATUSES.has(response.status)) {
    if (res.hasHeader('content-length')) res.removeHeader('content-length')
  } else res.setHeader('content-length', bytes.byteLength)
  if (bytes.byteLength === 0) res.end()
  // A small body goes out as latin1 text (one byte per character, so any bytes survive):
  // Node then sends headers and body in one write instead of a writev of two buffers.
  else if (bytes.byteLength <= SMALL_BODY) res.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1'), 'latin1')
  else res.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
}

/** Copies Web headers through a Node-style setter, giving `Set-Cookie` as one list. */
export function setWebHeaders(set: (name: string, value: string | string[]) => unknown, headers: Headers): void {
  for (const [name, value] of headers) if (name !== 'set-cookie') set(name, value)
  const cookies = headers.getSetCookie()
  if (cookies.length > 0) set('set-cookie', cookies)
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
  return jsonText(parsed)
}

/**
 * `JSON.stringify` without recursion: a client can nest a parsed body deeper than the
 * stack goes (`[[[[…]]]]` 60,000 deep parses, and then JSON.stringify throws), and the
 * fingerprint must still be made from it rather than answer 500. Same text as
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
  ;(Readable as unknown as (this: Readable, options?: ReadableOptions) => void).call(req)
  req.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  req.push(null)
}

type WriteCallback = (error?: Error | null) => void

// The responses whose writes `captureResponse` holds, each with what puts its methods back.
const captured = new WeakMap<ServerResponse, () => void>()

/**
 * Holds what is written to a Node response (status, headers, body) instead of sending
 * it, and resolves with it as a Web Response when the response is ended. The real
 * methods are put back at that point, so the adapter can send the final answer.
 *
 * A client that goes away changes nothing here: the route's transaction must stay
 * open until the route has finished with it (a rollback while it still writes would
 * let those writes land outside any transaction). It commits as usual, and a retry
 * with the same key gets the stored response. A route that never ends the response is
 * given up on at its deadline (`deadlineMs`); `sendWebResponse` then puts the methods
 * back before it sends idem's answer, and what the route writes later fails as a write
 * after the end does.
 */
export function captureResponse(res: ServerResponse): Promise<Response> {
  const original = { writeHead: res.writeHead, write: res.write, end: res.end, flushHeaders: res.flushHeaders }
  const chunks: Buffer[] = []
  return new Promise<Response>((resolve, reject) => {
    const restore = (): void => {
      captured.delete(res)
      Object.assign(res, original)
    }
    captured.set(res, restore)
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
