import { OutcomeUnreadableError } from '../core/errors/outcome-unreadable.js'
import { NO_BODY_STATUSES } from '../headers/no-body-statuses.js'
import { byteLength, type BodyForm, type HttpAnswer, type HttpBody } from './exchange.js'
import { storedField } from './header-field.js'

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
 * A response as the engine stores it (format 2): plain JSON, so the store needs to know
 * nothing about HTTP. Headers are a flat list of names (lower case) and values, so that
 * repeated fields such as `Set-Cookie` survive, each field as `storedField` makes it (a
 * field it cannot store is left out). The body is kept as the route answered it where
 * its platform tells (a Lambda function's text as `text`, its base64 as `base64`);
 * otherwise it is `text` when it is UTF-8 (most are: JSON, HTML), else `base64`, so any
 * bytes survive.
 *
 * Rows of format 1 (`{ status, headers: [[name, value], …], bodyBase64 }`) still replay.
 */
export interface StoredResponse {
  /** First in the JSON, where operations tools look for it (`idem stats` counts keys by stored status). */
  readonly status: number
  readonly v: 2
  /** `[name, value, name, value, …]`, names in lower case. */
  readonly headers: readonly string[]
  /** The body, when it is UTF-8 text. */
  readonly text?: string
  /** The body as base64, when it is not UTF-8 or was answered as base64. */
  readonly base64?: string
  /**
   * Set when the route answered a bare value rather than a response (a Lambda function
   * on payload 2.0, returning no `statusCode`): `text` is its JSON, and a replay on Lambda
   * answers that value again.
   */
  readonly value?: true
  /**
   * Set when the body was larger than `maxStoredBodyBytes` (or left no room in what the
   * store holds) and was not kept: its size in bytes. `text` is then empty, and the
   * replay says the body was omitted.
   */
  readonly omittedBodyBytes?: number
}

// Headers that describe the body's bytes: on the empty body of a replay whose body was
// omitted they would describe bytes that are not there (a JSON client would parse "").
const BODY_HEADERS = new Set(['content-type', 'content-language', 'content-disposition', 'content-encoding', 'content-range'])

// The stored form's JSON around its header list and body, at its longest (a status of
// three digits, the longer body field, the largest omitted size, which is longer than the
// value flag): what every stored response costs besides them.
const FRAME_BYTES = JSON.stringify({ status: 599, v: 2, headers: [], base64: '', omittedBodyBytes: Number.MAX_SAFE_INTEGER }).length - '[]'.length

const base64Length = (bytes: number): number => 4 * Math.ceil(bytes / 3)

/**
 * The largest response body whose stored form fits in an outcome of `maxOutcomeBytes`
 * (what the store holds), as base64 beside the status and headers of up to
 * `STORED_HEADERS_ROOM`: the most `maxStoredBodyBytes` may be on that store. (A text
 * body is stored as text when that fits, and as base64 otherwise.)
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

// Fatal: bytes that are not UTF-8 are stored as base64. A byte order mark is kept.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** How `storeResponse` stores a reply. */
export interface StoreOptions {
  /** What bounds the stored form. @default no bound */
  readonly limits?: StoredLimits
  /** How the route answered its body, where its platform tells (`RouteReply.form`). */
  readonly form?: BodyForm | undefined
  /** Told of each header field the stored form leaves out (`storedField`), and why. */
  readonly leftOut?: (name: string, reason: string) => void
}

/**
 * The stored form of a reply: its status, its allow-listed `headers` (a flat list) each
 * as `storedField` makes it, every body byte. A body larger than `limits.maxBodyBytes`,
 * or one that would take the stored form past `limits.maxOutcomeBytes` (the store's
 * limit), is left out (with the headers that describe it) and its size recorded instead,
 * so the outcome is still stored and the effect never runs again. A body answered as
 * text (`form`) is stored as text or left out, never turned into base64.
 */
export function storeResponse(status: number, headers: readonly string[], body: HttpBody, { limits = UNLIMITED, form, leftOut }: StoreOptions = {}): StoredResponse {
  const fields = storedHeaders(headers, leftOut)
  const size = byteLength(body)
  const whole = size <= limits.maxBodyBytes ? withBody(status, fields, body, size, form, limits.maxOutcomeBytes) : undefined
  return whole ?? { status, v: 2, headers: withoutBodyHeaders(fields), text: '', omittedBodyBytes: size }
}

// The reply's fields in their stored form; one that has none is left out, and told.
function storedHeaders(headers: readonly string[], leftOut: StoreOptions['leftOut']): string[] {
  const stored: string[] = []
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const field = storedField(headers[i]!, headers[i + 1]!)
    if (field.ok) stored.push(field.name, field.value)
    else leftOut?.(headers[i]!, field.reason)
  }
  return stored
}

// The stored form with the body, in the form it was answered in, or else as text when it
// is UTF-8 and as base64 otherwise; undefined when it does not fit what the store holds.
function withBody(status: number, headers: string[], body: HttpBody, size: number, form: BodyForm | undefined, maxOutcomeBytes: number): StoredResponse | undefined {
  let headerChars = 0
  for (let i = 0; i < headers.length; i++) headerChars += headers[i]!.length
  const fit = (bodyJsonBytes: number): boolean => fits(headers, headerChars, bodyJsonBytes, maxOutcomeBytes)
  const text = form === 'base64' ? undefined : textOf(body)
  // A byte of UTF-8 takes at most 6 bytes of JSON (`\u001f`): that bound settles nearly
  // every body at once; only one near the limit is measured.
  if (text !== undefined && (fit(6 * size + 2) || fit(Buffer.byteLength(JSON.stringify(text), 'utf8')))) {
    return form === 'value' ? { status, v: 2, headers, text, value: true } : { status, v: 2, headers, text }
  }
  if (form === 'text' || form === 'value') return undefined
  return fit(base64Length(size) + 2) ? { status, v: 2, headers, base64: base64Of(body) } : undefined
}

// The body as text, when it is UTF-8: a string is (a lone surrogate was sent as U+FFFD).
function textOf(body: HttpBody): string | undefined {
  if (typeof body === 'string') return body.toWellFormed()
  try {
    return utf8.decode(body)
  } catch {
    return undefined
  }
}

function base64Of(body: HttpBody): string {
  return typeof body === 'string' ? Buffer.from(body, 'utf8').toString('base64') : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('base64')
}

function withoutBodyHeaders(headers: readonly string[]): string[] {
  const kept: string[] = []
  for (let i = 0; i + 1 < headers.length; i += 2) if (!BODY_HEADERS.has(headers[i]!)) kept.push(headers[i]!, headers[i + 1]!)
  return kept
}

// Whether the stored form with a body of this JSON size fits the store. A character of a
// header takes at most 6 bytes of JSON and a string 3 more (`"",`): that bound settles
// nearly every response in a few additions; only headers near the limit are measured.
function fits(headers: readonly string[], headerChars: number, bodyJsonBytes: number, maxOutcomeBytes: number): boolean {
  const rest = maxOutcomeBytes - FRAME_BYTES - bodyJsonBytes
  if (headerChars * 6 + headers.length * 3 + 2 <= rest) return true
  return Buffer.byteLength(JSON.stringify(headers), 'utf8') <= rest
}

/**
 * The replay of a stored response (format 2, or 1): same status, stored headers, same
 * body bytes, marked replayed (and, for a body that was too large to store, marked
 * omitted, with no body). Only headers in `allowed` are replayed, whatever the row
 * holds: a row written under a wider allow-list, or by hand, never sends a `Set-Cookie`
 * the current one leaves out. Header fields are read by the rule they were stored by
 * (`storedField`), so a row written before with spaces around a value reads without them.
 * @throws OutcomeUnreadableError when the stored value is not a stored response (a
 *   corrupted row that still parsed as JSON): no guess is ever replayed
 */
export function replayAnswer(stored: unknown, allowed?: ReadonlySet<string>): HttpAnswer {
  const { status, headers: pairs, body, omitted, value } = readStored(stored)
  const headers: string[] = []
  for (let i = 0; i < pairs.length; i += 2) {
    const name = pairs[i]!
    if (name === REPLAYED_HEADER || name === BODY_OMITTED_HEADER || (allowed !== undefined && !allowed.has(name))) continue
    headers.push(name, pairs[i + 1]!)
  }
  headers.push(REPLAYED_HEADER, 'true')
  if (omitted) headers.push(BODY_OMITTED_HEADER, 'true')
  const answer = { status, headers, body: NO_BODY_STATUSES.has(status) ? '' : body }
  return value === undefined ? answer : { ...answer, value }
}

interface ReadStored {
  status: number
  headers: readonly string[]
  body: HttpBody
  omitted: boolean
  value?: { json: unknown }
}

// Groups of four, checked as a length: a repeated group, `(?:[…]{4})*`, takes the regex
// engine's stack once per group and overflows it on a body of some 12 MB.
const BASE64 = /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

// Strict, since Buffer.from(text, 'base64') skips what it cannot decode and would
// replay other bytes than were stored, and a header no platform sends would fail the answer.
function readStored(stored: unknown): ReadStored {
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return unreadable('not an object')
  const row = stored as Record<string, unknown>
  const { status } = row
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) return unreadable('no valid status')
  const headers = row.v === 2 ? headerList(row.headers) : legacyHeaders(row.headers)
  const omitted = omittedSize(row.omittedBodyBytes)
  if (row.v === 2) {
    const { text, base64 } = row
    if (row.value !== undefined) return storedValue(row, status, headers)
    if (typeof text === 'string' && base64 === undefined) return { status, headers, body: text, omitted: checkOmitted(omitted, text) }
    if (typeof base64 === 'string' && text === undefined && omitted === undefined) return { status, headers, body: fromBase64(base64), omitted: false }
    return unreadable('no text or base64 body')
  }
  if (row.v !== undefined) return unreadable(`an unknown format ${JSON.stringify(row.v)}`)
  if (typeof row.bodyBase64 !== 'string') return unreadable('a body that is not base64')
  return { status, headers, body: fromBase64(row.bodyBase64), omitted: checkOmitted(omitted, row.bodyBase64) }
}

// A bare value: stored whole, as its JSON text.
function storedValue(row: Record<string, unknown>, status: number, headers: readonly string[]): ReadStored {
  const { text } = row
  if (row.value !== true || typeof text !== 'string' || row.base64 !== undefined || row.omittedBodyBytes !== undefined) return unreadable('a malformed value')
  try {
    return { status, headers, body: text, omitted: false, value: { json: JSON.parse(text) as unknown } }
  } catch {
    return unreadable('a value that is not JSON')
  }
}

function headerList(headers: unknown): string[] {
  if (!Array.isArray(headers) || headers.length % 2 !== 0) return unreadable('no header list')
  const list: string[] = []
  for (let i = 0; i < headers.length; i += 2) readField(list, headers[i], headers[i + 1])
  return list
}

// Format 1: `[[name, value], …]`.
function legacyHeaders(headers: unknown): string[] {
  if (!Array.isArray(headers)) return unreadable('no header list')
  const list: string[] = []
  for (const pair of headers) {
    if (!Array.isArray(pair) || pair.length !== 2) return unreadable('a malformed header')
    readField(list, pair[0], pair[1])
  }
  return list
}

// A field read by the rule it was stored by: one that breaks it was never written by idem.
function readField(list: string[], name: unknown, value: unknown): void {
  if (typeof name !== 'string' || typeof value !== 'string') return unreadable('a malformed header')
  const field = storedField(name, value)
  if (!field.ok) throw new OutcomeUnreadableError(`The stored response holds a header that is not a valid HTTP field (${field.reason}): the row is corrupted`)
  list.push(field.name, field.value)
}

function omittedSize(value: unknown): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return unreadable('a malformed omitted-body size')
  return value
}

// A row whose body was omitted holds no body.
function checkOmitted(omitted: number | undefined, body: string): boolean {
  if (omitted === undefined) return false
  return body === '' ? true : unreadable('a malformed omitted-body size')
}

function fromBase64(text: string): Uint8Array {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return unreadable('a body that is not base64')
  return Buffer.from(text, 'base64')
}

function unreadable(what: string): never {
  throw new OutcomeUnreadableError(`The stored response is unreadable (${what}): the row is corrupted or was not written by the HTTP middleware`)
}
