/**
 * The replay of a stored response: a stored row read back, strictly (a row idem did not
 * write is never guessed at), and answered as the first answer was.
 */
import { OutcomeUnreadableError } from '../core/errors/outcome-unreadable.js'
import { NO_BODY_STATUSES } from '../headers/no-body-statuses.js'
import type { HttpAnswer, HttpBody } from './exchange.js'
import { BODY_OMITTED_HEADER, REPLAYED_HEADER, storedField } from './stored-response.js'

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
