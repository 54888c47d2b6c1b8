import { OutcomeUnreadableError } from '../core/errors/outcome-unreadable.js'
import { lightweightBody } from './lightweight-response.js'

/** The header that marks a response as the stored outcome of an earlier request. */
export const REPLAYED_HEADER = 'idempotent-replayed'

/**
 * The header that marks a replay whose body was not stored, being larger than
 * `maxStoredBodyBytes`: its body is empty, its status and headers are the first answer's.
 */
export const BODY_OMITTED_HEADER = 'idempotent-body-omitted'

/**
 * 1 MiB: the default largest response body stored for replays (`maxStoredBodyBytes`),
 * or less when the store holds less (`largestStoredBody`).
 */
export const DEFAULT_MAX_STORED_BODY_BYTES = 1024 * 1024

/**
 * 16 KiB: the room a stored response's allow-listed headers (their JSON) are given
 * beside a body of `maxStoredBodyBytes` when that option is checked against what the
 * store holds. A response whose headers take more is stored without its body whenever
 * the two would not fit together.
 */
export const STORED_HEADERS_ROOM = 16 * 1024

/**
 * A response as the engine stores it: plain JSON, so the store needs to know nothing
 * about HTTP. Headers are name/value pairs (lower-case names) so that repeated fields
 * such as `Set-Cookie` survive; the body is base64 so any bytes survive.
 */
export interface StoredResponse {
  status: number
  headers: Array<[string, string]>
  bodyBase64: string
  /**
   * Set when the body was larger than `maxStoredBodyBytes` and was not kept: its size in
   * bytes. `bodyBase64` is then empty, and the replay says the body was omitted.
   */
  omittedBodyBytes?: number
}

// Headers that describe the body's bytes: on the empty body of a replay whose body was
// omitted they would describe bytes that are not there (a JSON client would parse "").
const BODY_HEADERS = new Set(['content-type', 'content-language', 'content-disposition', 'content-encoding', 'content-range'])

// The stored form's JSON around its header list and body, at its longest (a status of
// three digits, the largest omitted size): what every stored response costs besides them.
const FRAME_BYTES = JSON.stringify({ status: 599, headers: [], bodyBase64: '', omittedBodyBytes: Number.MAX_SAFE_INTEGER }).length - '[]'.length

const base64Length = (bytes: number): number => 4 * Math.ceil(bytes / 3)

/**
 * The largest response body whose stored form fits in an outcome of `maxOutcomeBytes`
 * (what the store holds), as base64 beside the status and headers of up to
 * `STORED_HEADERS_ROOM`: the most `maxStoredBodyBytes` may be on that store.
 * @example largestStoredBody(16 * 1024 * 1024) // 12570564: 16 MiB less the frame and the headers' room, as base64
 */
export function largestStoredBody(maxOutcomeBytes: number): number {
  const room = maxOutcomeBytes - FRAME_BYTES - STORED_HEADERS_ROOM
  return room <= 0 ? 0 : Math.floor(room / 4) * 3
}

/** What bounds a stored response: its body's size, and the size of the whole stored form. */
export interface StoredLimits {
  /** A larger body is left out (`maxStoredBodyBytes`). */
  readonly maxBodyBytes: number
  /** The stored form's JSON, in UTF-8 bytes, is at most this (the store's `maxOutcomeBytes`): a body that would take it further is left out. */
  readonly maxOutcomeBytes: number
}

const UNLIMITED: StoredLimits = { maxBodyBytes: Infinity, maxOutcomeBytes: Infinity }

// Statuses whose responses have no body; `new Response(body, { status })` rejects one.
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304])

/**
 * The stored form of a response: its status, the allow-listed headers, every body byte.
 * A body larger than `limits.maxBodyBytes`, or one that would take the stored form past
 * `limits.maxOutcomeBytes` (the store's limit), is left out (with the headers that
 * describe it) and its size recorded instead, so the outcome is still stored and the
 * effect never runs again.
 */
export function storeResponse(response: Response, body: Uint8Array, allowed: ReadonlySet<string>, limits: StoredLimits = UNLIMITED): StoredResponse {
  const headers: Array<[string, string]> = []
  let headerChars = 0
  // Iterating Headers yields each Set-Cookie field on its own and lower-case names.
  for (const [name, value] of response.headers) {
    if (!allowed.has(name)) continue
    headers.push([name, value])
    headerChars += name.length + value.length
  }
  if (body.byteLength <= limits.maxBodyBytes && fits(headers, headerChars, body.byteLength, limits.maxOutcomeBytes)) {
    return { status: response.status, headers, bodyBase64: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('base64') }
  }
  return { status: response.status, headers: headers.filter(([name]) => !BODY_HEADERS.has(name)), bodyBase64: '', omittedBodyBytes: body.byteLength }
}

// Whether the stored form with this body fits the store. A character of a header takes at
// most 6 bytes of JSON (`\u001f`) and a pair 8 more (`["",""],`): that bound settles
// nearly every response in a few additions; only headers near the limit are measured.
function fits(headers: ReadonlyArray<[string, string]>, headerChars: number, bodyBytes: number, maxOutcomeBytes: number): boolean {
  const rest = maxOutcomeBytes - FRAME_BYTES - base64Length(bodyBytes)
  if (headerChars * 6 + headers.length * 8 + 2 <= rest) return true
  return Buffer.byteLength(JSON.stringify(headers), 'utf8') <= rest
}

// The bytes of the responses made here, so that reading them back (to store them, or
// to write them to a Node socket) skips a pass through a body stream.
const knownBodies = new WeakMap<Response, Uint8Array>()

/**
 * A response's body bytes: known ones at once, a lightweight response's without
 * building it (the response stays unread), others read from the body stream.
 */
export async function bodyBytes(response: Response): Promise<Uint8Array> {
  const known = knownBodies.get(response)
  if (known !== undefined) return known
  const light = lightweightBody(response)
  if (light === undefined) return new Uint8Array(await response.arrayBuffer())
  knownBodies.set(response, light)
  return light
}

// Groups of four, checked as a length: a repeated group, `(?:[…]{4})*`, takes the regex
// engine's stack once per group and overflows it on a body of some 12 MB.
const BASE64 = /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * The replay of a stored response: same status, stored headers, same body bytes, marked
 * replayed (and, for a body that was too large to store, marked omitted, with no body).
 * `streamless` makes it with `streamlessResponse`, for adapters that write it with
 * `bodyBytes`. Only headers in `allowed` are replayed, whatever the row holds: a
 * row written under a wider allow-list, or by hand, never sends a `Set-Cookie` the
 * current one leaves out.
 * @throws OutcomeUnreadableError when the stored value is not a stored response (a
 *   corrupted row that still parsed as JSON): no guess is ever replayed
 */
export function replayResponse(stored: unknown, streamless = false, allowed?: ReadonlySet<string>): Response {
  const { status, headers: pairs, bodyBase64, omittedBodyBytes } = checkStored(stored)
  const headers = new Headers()
  try {
    for (const [name, value] of pairs) if (allowed === undefined || allowed.has(name)) headers.append(name, value)
  } catch (cause) {
    throw new OutcomeUnreadableError('The stored response holds a header that is not a valid HTTP field: the row is corrupted', { cause })
  }
  headers.set(REPLAYED_HEADER, 'true')
  if (omittedBodyBytes !== undefined) headers.set(BODY_OMITTED_HEADER, 'true')
  const body = Buffer.from(bodyBase64, 'base64')
  return streamless ? streamlessResponse(status, '', headers, body) : makeResponse(status, '', headers, body)
}

// Strict, since Buffer.from(text, 'base64') skips what it cannot decode and would
// replay other bytes than were stored.
function checkStored(stored: unknown): StoredResponse {
  const unreadable = (what: string): never => {
    throw new OutcomeUnreadableError(`The stored response is unreadable (${what}): the row is corrupted or was not written by the HTTP middleware`)
  }
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return unreadable('not an object')
  const { status, headers, bodyBase64 } = stored as Partial<Record<keyof StoredResponse, unknown>>
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) return unreadable('no valid status')
  if (!Array.isArray(headers)) return unreadable('no header list')
  for (const pair of headers) {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') return unreadable('a malformed header')
  }
  if (typeof bodyBase64 !== 'string' || bodyBase64.length % 4 !== 0 || !BASE64.test(bodyBase64)) return unreadable('a body that is not base64')
  const { omittedBodyBytes } = stored as { omittedBodyBytes?: unknown }
  if (omittedBodyBytes === undefined) return { status, headers: headers as Array<[string, string]>, bodyBase64 }
  if (typeof omittedBodyBytes !== 'number' || !Number.isSafeInteger(omittedBodyBytes) || omittedBodyBytes < 0 || bodyBase64 !== '') {
    return unreadable('a malformed omitted-body size')
  }
  return { status, headers: headers as Array<[string, string]>, bodyBase64, omittedBodyBytes }
}

/**
 * The handler's response, with its body bytes: the same object when its bytes are
 * known (its body was not read), else a copy carrying the bytes read.
 */
export function withBody(response: Response, body: Uint8Array): Response {
  if (knownBodies.has(response)) return response
  return makeResponse(response.status, response.statusText, response.headers, body)
}

/** A response from its parts; a body sent with a no-body status (204, 304) is dropped. */
export function makeResponse(status: number, statusText: string, headers: Headers, body: Uint8Array): Response {
  const sent = sentBody(status, body)
  const response = new Response(sent, { status, statusText, headers })
  knownBodies.set(response, sent ?? EMPTY)
  return response
}

/**
 * A response whose body only `bodyBytes` reads: its `body` is null. Node's Response
 * builds a stream around any body it is given, which is most of what making one costs
 * (about 13 µs a response against 1 µs without a body, measured on Node 20). For the
 * adapters that write answers to Node's response themselves (`sendWebResponse`), where
 * nobody reads that stream.
 */
export function streamlessResponse(status: number, statusText: string, headers: Headers, body: Uint8Array): Response {
  const response = new Response(null, { status, statusText, headers })
  knownBodies.set(response, sentBody(status, body) ?? EMPTY)
  return response
}

const EMPTY = new Uint8Array(0)

function sentBody(status: number, body: Uint8Array): Uint8Array | null {
  return NULL_BODY_STATUSES.has(status) || body.byteLength === 0 ? null : body
}
