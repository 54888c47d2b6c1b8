/**
 * A Node request (`IncomingMessage`) as the middleware reads it, shared by the Express,
 * Fastify and NestJS adapters: its body read on demand from the stream, or as a parser
 * left it, and put back for the parsers that come after. No Web `Request` is made.
 * Mapping only: no idempotency behaviour here.
 */
import type { IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
import { EMPTY_BODY, tooLarge } from '../../body.js'
import type { HttpRequest, RouteDiscarded } from '../../exchange.js'

/** A Node request's body stream, read when the middleware asks, and whether reading it was started but not finished. */
export interface NodeBody {
  /**
   * Reads the whole body, at most `limit` bytes: counted as it arrives and refused as soon
   * as it passes the limit, the rest of the upload left unread.
   * @throws BodyTooLargeError
   */
  read(limit: number): Promise<Uint8Array>
  /**
   * True when reading began and stopped before the end (a 413). The rest of the upload
   * is then neither read nor discarded, so the connection must close after the answer.
   */
  unfinished(): boolean
}

/**
 * A Node stream's body, read only when the middleware asks, so a request it lets
 * through keeps its body for the framework's own parsers. Once asked, it reads the
 * stream as it flows; past the limit it stops (the stream paused, not destroyed, so the
 * answer still goes out). Its listeners are removed once done, so whoever reads the
 * stream next has it to themselves.
 */
export function nodeBody(stream: Readable): NodeBody {
  let started = false
  let ended = false
  const read = (limit: number): Promise<Uint8Array> =>
    new Promise((resolve, reject) => {
      started = true
      const chunks: Uint8Array[] = []
      let size = 0
      const onData = (chunk: Buffer | string): void => {
        const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
        size += bytes.byteLength
        if (size <= limit) return void chunks.push(bytes)
        // Stop the upload instead of draining it; the adapter closes the connection.
        detach()
        stream.pause()
        reject(tooLarge(limit))
      }
      const onEnd = (): void => {
        ended = true
        detach()
        resolve(chunks.length === 0 ? EMPTY_BODY : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size))
      }
      const onError = (error: Error): void => {
        detach()
        reject(error)
      }
      const detach = (): void => {
        stream.off('data', onData)
        stream.off('end', onEnd)
        stream.off('error', onError)
      }
      stream.on('data', onData)
      stream.on('end', onEnd)
      stream.on('error', onError)
    })
  return { read, unfinished: () => started && !ended }
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
      if (typeof body === 'object' && 'unfinished' in body) return body.read(limit)
      const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body
      if (bytes.byteLength > limit) throw tooLarge(limit)
      return bytes
    },
  }
}

/** True when a Node request says it carries a body (a length above 0, or chunked). */
export function declaresBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined
}

/**
 * True when the client has gone (its socket closed or closed for reading): what body
 * parsers take for "the request is over" (Express's, through on-finished), so one that
 * runs now skips the body.
 */
export function clientGone(req: IncomingMessage): boolean {
  return req.socket === null || req.socket.destroyed || !req.socket.readable
}

/**
 * What a protected route with a body to read gives back when its client left while the
 * key was being claimed (a long `wait`, say): body parsers after idem skip a request
 * whose client has gone (Express's, through on-finished: "already finished"), so a
 * route started now would never see the body its key's fingerprint covers, and could
 * store what it made of nothing. It is rolled back instead (499, nothing sent) and the
 * retry runs the route with its body. `undefined` when the route may run. The one rule
 * for every Node adapter whose body a parser after it may read (Express, Koa).
 */
export function leftBeforeRoute<R>(req: IncomingMessage, readsBody: boolean, bytes: Uint8Array, nothing: R): RouteDiscarded<R> | undefined {
  if (!readsBody || bytes.byteLength === 0 || !clientGone(req)) return undefined
  return { kind: 'discard', response: nothing, status: 499 }
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
