/**
 * The stored form of a response (what the engine stores for a route's answer, plain JSON)
 * as a fresh answer makes it: which statuses are stored, the form written, and the one
 * rule for a header field that idem stores and replays (`storedField`), applied when a
 * response is written and again when one is read back (replay.ts), so what any front end
 * stores it can always read; each front end then sends a stored value the way its
 * platform can (`wireValue` for a byte wire).
 */
import type { BodyForm, HttpBody } from './exchange.js'

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

/** Statuses a client is expected to retry (timeout, too early, rate limited): never stored. */
export const TRANSIENT_STATUSES: readonly number[] = [408, 425, 429]

/**
 * Stores 2xx, 3xx and non-transient 4xx outcomes; 5xx and 408/425/429 are rolled back
 * so that their retry runs again (DESIGN "What is stored").
 * @example
 * defaultStoreStatus(201) // true
 * defaultStoreStatus(503) // false: rolled back, the retry runs again
 */
export function defaultStoreStatus(status: number): boolean {
  return status < 500 && !TRANSIENT_STATUSES.includes(status)
}

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

/** The byte length of a body. */
export function byteLength(body: HttpBody): number {
  return typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength
}

/** A header field in its stored form, or why it has none. */
export type StoredField = { readonly ok: true; readonly name: string; readonly value: string } | { readonly ok: false; readonly reason: string }

// RFC 9110 §5.1: a field name is a token.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// Control characters but HTAB: CR, LF and NUL end or break a field on the wire, and no
// platform sends the others (DEL among them).
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/

/**
 * A header field as idem stores it: the name a token, in lower case; the value without
 * the spaces and tabs around it (RFC 9110 §5.5: they are not part of it), holding any
 * character but a control character other than HTAB. Unicode text is kept as text (a
 * Lambda function's `filename="报告.pdf"`), and so are the Latin-1 characters of rows
 * written before (obs-text: bytes, as Node reads them); a lone surrogate is stored as
 * U+FFFD, as it is sent.
 * @example storedField('Cache-Control', 'no-store ') // { ok: true, name: 'cache-control', value: 'no-store' }
 */
export function storedField(name: string, value: string): StoredField {
  if (!TOKEN.test(name)) return { ok: false, reason: 'its name is not a token' }
  const trimmed = withoutEdgeSpace(value)
  if (CONTROL.test(trimmed)) return { ok: false, reason: 'its value holds a control character (CR, LF, NUL and the like)' }
  return { ok: true, name: name.toLowerCase(), value: trimmed.toWellFormed() }
}

// The value without the spaces and tabs around it; most have none, and are not copied.
function withoutEdgeSpace(value: string): string {
  let start = 0
  let end = value.length
  while (start < end && isSpace(value.charCodeAt(start))) start++
  while (end > start && isSpace(value.charCodeAt(end - 1))) end--
  return start === 0 && end === value.length ? value : value.slice(start, end)
}

const isSpace = (code: number): boolean => code === 0x20 || code === 0x09

/**
 * A stored value as a byte wire carries it, for the front ends whose headers are bytes
 * (Node writes a header string one byte per character, as Latin-1; a Web `Headers` holds
 * ByteStrings): a value holding a character above U+00FF, text a Lambda function
 * answered, as its UTF-8 bytes, one character per byte; any other as it is, each
 * character the byte it stood for when it was read.
 * @example wireValue('attachment; filename="报告.pdf"') // 'attachment; filename="æ\u008a¥å\u0091\u008a.pdf"'
 */
export function wireValue(value: string): string {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0xff) return Buffer.from(value, 'utf8').toString('latin1')
  return value
}
