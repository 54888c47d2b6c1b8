/**
 * The holding of a Node response's writes until the adapter sends them (`response.ts`
 * sends; this file holds). Mapping only: no idempotency behaviour here.
 *
 * Lean by design, as it runs for every protected request: the methods put in place of
 * the response's own are made once, here; what a hold keeps is one object of one shape
 * (`Hold`), found through a WeakMap; a route that ends with one `end(body)` (the common
 * case) keeps its body as it gave it, in no array. The hold is never taken off the
 * response: once released, its methods hand each call to the ones they stand for. Adding
 * a property to an Express response is dear (Express gives each one its prototype with
 * `setPrototypeOf`, and V8 then makes a new hidden class for each property added), so
 * the three methods are added once per response and never put back, and
 * `flushHeaders` is left as it is: Node's calls `writeHead` (held) and writes no byte.
 */
import type { ServerResponse } from 'node:http'
import type { HttpBody, RouteReply } from '../../exchange.js'

/** Told once when something answers a held response a second time: the status the route answered with, and the second answer's. */
export type SecondAnswer = (answered: number, second: number) => void

type WriteCallback = (error?: Error | null) => void
type WriteHead = ServerResponse['writeHead']
type Write = ServerResponse['write']
type End = ServerResponse['end']

/** The methods a hold stands in for. */
export interface Writes {
  readonly writeHead: WriteHead
  readonly write: Write
  readonly end: End
}

/** The route's answer as the response held it when the route ended it. */
export interface HeldAnswer {
  readonly status: number
  readonly statusMessage: string
  /** Every header field then (lower-case names), its value as Node keeps it. */
  readonly headers: Readonly<Record<string, number | string | string[] | undefined>>
}

/** A response whose writes are held: the methods it stands in for, and what was written. */
export class Hold implements Writes {
  readonly writeHead: WriteHead
  readonly write: Write
  readonly end: End
  /** The first chunk written; `rest` the ones after it, when there are any. */
  first: HttpBody | undefined = undefined
  rest: HttpBody[] | undefined = undefined
  /** What the route answered, once it ended the response: it stays held until the adapter sends it. */
  answer: HeldAnswer | undefined = undefined
  /** Something wrote to the response after the route's answer (dropped). */
  overwritten = false
  /** Sent or given up: every call goes to the methods the hold stands in for. */
  released = false

  constructor(
    writes: Writes,
    readonly resolve: (reply: RouteReply<HttpBody>) => void,
    /** Told of the first answer written after the route's own (which is dropped); unset once told. */
    public second: SecondAnswer | undefined,
  ) {
    this.writeHead = writes.writeHead
    this.write = writes.write
    this.end = writes.end
  }
}

// The responses `captureResponse` has held, each with its latest hold.
const holds = new WeakMap<ServerResponse, Hold>()

/**
 * Holds what is written to a Node response (see `captureResponse` in `response.ts`),
 * resolving with the route's reply when the route ends it.
 */
export function hold(res: ServerResponse, second?: SecondAnswer): Promise<RouteReply<HttpBody>> {
  return new Promise<RouteReply<HttpBody>>((resolve) => {
    const before = holds.get(res)
    if (before === undefined) {
      holds.set(res, new Hold(res, resolve, second))
      res.writeHead = heldWriteHead
      res.write = heldWrite
      res.end = heldEnd
      return
    }
    // Held before: the methods it stood in for, and ours back in front of whatever came since.
    holds.set(res, new Hold(before, resolve, second))
    if (res.writeHead !== heldWriteHead) res.writeHead = heldWriteHead
    if (res.write !== heldWrite) res.write = heldWrite
    if (res.end !== heldEnd) res.end = heldEnd
  })
}

/** The status the route answered a held response with, once it has ended it; undefined before, once released, or when nothing holds it. */
export function answeredStatus(res: ServerResponse): number | undefined {
  const held = holds.get(res)
  return held === undefined || held.released ? undefined : held.answer?.status
}

/** Releases a held response: its writes go to the methods the hold stands in for from now on. The hold, or undefined when nothing held it. */
export function unhold(res: ServerResponse): Hold | undefined {
  const held = holds.get(res)
  if (held === undefined || held.released) return undefined
  held.released = true
  return held
}

/**
 * The route's answer back on the response, as it was when the route ended it, when
 * something wrote to it since (dropped), and may have changed its status and headers on
 * the way (an error handler sets its own before it writes).
 */
export function restore(res: ServerResponse, held: Hold, answer: HeldAnswer): void {
  if (!held.overwritten && res.statusCode === answer.status) return
  res.statusCode = answer.status
  res.statusMessage = answer.statusMessage
  for (const name of res.getHeaderNames()) res.removeHeader(name)
  for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined) res.setHeader(name, value)
}

// The hold of a response whose methods are ours: set before they are.
function holdOf(res: ServerResponse): Hold {
  const held = holds.get(res)
  if (held === undefined) throw new Error('idem: a held response method was called on a response that was never held')
  return held
}

// Whether the route has answered a held response: what is written to it then is dropped.
function overwrites(held: Hold): boolean {
  if (held.answer === undefined) return false
  held.overwritten = true
  return true
}

const heldWriteHead = function writeHead(this: ServerResponse, status: number, reason?: unknown, headers?: unknown) {
  const held = holdOf(this)
  if (held.released) return Reflect.apply(held.writeHead, this, arguments)
  if (overwrites(held)) return this
  this.statusCode = status
  if (typeof reason === 'string') this.statusMessage = reason
  setHeadersFrom(this, typeof reason === 'string' ? headers : reason)
  return this
} as WriteHead

const heldWrite = function write(this: ServerResponse, chunk: unknown, encoding?: unknown, callback?: unknown) {
  const held = holdOf(this)
  if (held.released) return Reflect.apply(held.write, this, arguments)
  if (!overwrites(held)) collect(held, chunk, encoding)
  const done = typeof encoding === 'function' ? encoding : callback
  if (typeof done === 'function') queueMicrotask(() => (done as WriteCallback)())
  return true
} as Write

const heldEnd = function end(this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) {
  const held = holdOf(this)
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
  const answer: HeldAnswer = { status: res.statusCode, statusMessage: res.statusMessage, headers: res.getHeaders() }
  held.answer = answer
  held.resolve(new HeldReply(answer, joined(held)))
}

// What the route answered: its status and body, and its headers as they were then.
class HeldReply implements RouteReply<HttpBody> {
  readonly kind = 'reply'
  readonly response: HttpBody
  readonly status: number

  constructor(
    private readonly answer: HeldAnswer,
    readonly body: HttpBody,
  ) {
    this.response = body
    this.status = answer.status
  }

  headers(names: ReadonlySet<string>): string[] {
    return recordHeaders(this.answer.headers, names)
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
