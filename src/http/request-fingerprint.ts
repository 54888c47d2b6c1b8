import { MIMEType } from 'node:util'
import canonicalize from 'canonicalize'
import { canonicalJsonText } from '../core/canonical-json.js'
import { encodedPart, hashFingerprint, isCanonicalJson, type FingerprintPart } from '../core/fingerprint.js'
import { assertKnownOptions, optionNames } from '../core/errors/option-checks.js'

/** What a request's fingerprint is computed from. */
export interface FingerprintInput {
  /** HTTP method (case-insensitive) or any verb naming the operation. */
  method: string
  /** The route pattern (`/orders/:id`) or path the request was sent to. */
  route: string
  /**
   * The query string, without `?`. Its parameters count like a form body's: as pairs
   * sorted by name, the values of a repeated name kept in their order; an empty one
   * counts as none (so a request without one fingerprints as before queries were
   * counted).
   */
  query?: string | undefined
  /**
   * The body's bytes (or text), if any, with its content codings undone: the middleware
   * decodes a gzip, deflate or br body before it fingerprints it (docs/http.md).
   */
  body?: Uint8Array | string | undefined
  /**
   * The body's media type; decides how the body is normalised. Its parameters are
   * ignored (`charset` too: JSON and forms are read as UTF-8), except a multipart body's
   * `boundary`, which says where its parts are.
   */
  contentType?: string | null | undefined
  /**
   * Compare only these body fields (dot paths such as `customer.id`), for JSON and
   * form bodies. Other bodies are compared whole.
   */
  fields?: readonly string[] | undefined
}

const INPUT_FIELDS = optionNames<FingerprintInput>({ method: true, route: true, query: true, body: true, contentType: true, fields: true })

/**
 * SHA-256 over method, route, query parameters (when there are any: `?dry_run=true` is
 * another request) and body, hex encoded. JSON bodies are canonicalised (RFC 8785), so
 * key order and whitespace do not count as a different payload. Query parameters and
 * form bodies count as name/value pairs sorted by name only, so the names may come in
 * any order but the values of a repeated name keep theirs (`?tier=gold&tier=basic` is
 * not `?tier=basic&tier=gold`: frameworks read the first, or an array in order).
 * Multipart bodies count by their parts (each part's header lines and bytes, in order),
 * not by the boundary that separates them, which a client picks anew on every send.
 * Anything else is compared as bytes: other media types, JSON that does not parse or
 * that the canonicaliser refuses, a form or query whose escapes do not decode as UTF-8
 * (decoded, `%E9` and `%E8` would both be U+FFFD), a multipart body without a boundary
 * or without one delimiter. It never throws for any body.
 * It throws `InvalidOptionError` for a field of `input` it does not know.
 *
 * Known limit: JSON numbers are compared as IEEE doubles, so two integers beyond 2^53
 * that round to the same double (e.g. 9007199254740993 and 9007199254740992) count
 * as equal. Send such ids as strings.
 *
 * @example fingerprintRequest({ method: 'POST', route: '/orders', body: '{"a":1}', contentType: 'application/json' })
 */
export function fingerprintRequest(input: FingerprintInput): string {
  // A misspelt field (`bdy`) would leave the body out, and two requests alike.
  assertKnownOptions('fingerprintRequest', input, INPUT_FIELDS)
  return hashRequest(input)
}

/**
 * `fingerprintRequest` without the check of `input`'s names, for idem's own callers on
 * the request path, whose input is an object literal the compiler has checked.
 */
export function hashRequest(input: FingerprintInput): string {
  const query = input.query ?? ''
  const pairs = query === '' ? '[]' : canonicalPairs(query, undefined)
  let head = encodedPart(upperCase(input.method)) + encodedPart(input.route)
  // 'query' and 'query-text' are never a body kind, so the shapes of the list never collide.
  if (pairs === undefined) head += encodedPart('query-text') + encodedPart(query)
  else if (pairs !== '[]') head += encodedPart('query') + encodedPart(pairs)
  return hashFingerprint(head, normaliseBody(input))
}

// Methods come upper case from every server: no copy for them.
function upperCase(method: string): string {
  switch (method) {
    case 'POST':
    case 'PUT':
    case 'PATCH':
    case 'DELETE':
    case 'GET':
      return method
    default:
      return method.toUpperCase()
  }
}

// The body as the list it is hashed as: its kind, then what counts of it.
type Normalised = readonly ['none' | 'json' | 'form' | 'bytes', FingerprintPart] | readonly ['multipart', string, ...Uint8Array[]]

const utf8 = new TextDecoder('utf-8', { fatal: true })

function normaliseBody({ body, contentType, fields }: FingerprintInput): Normalised {
  if (body === undefined || body.length === 0) return ['none', '']
  const media = mediaType(contentType)
  const isJson = media === 'application/json' || media.endsWith('+json')
  const isForm = media === 'application/x-www-form-urlencoded'
  // The common case: JSON sent in canonical form counts as its own bytes.
  if (isJson && fields === undefined && typeof body !== 'string' && isCanonicalJson(body)) return ['json', body]
  if (!isJson && !isForm) {
    if (media.startsWith('multipart/')) return multipartParts(body, contentType ?? '') ?? ['bytes', body]
    return ['bytes', body]
  }
  let text: string
  try {
    text = typeof body === 'string' ? body : utf8.decode(body)
  } catch {
    return ['bytes', body]
  }
  if (isForm) {
    const pairs = canonicalPairs(text, fields)
    return pairs === undefined ? ['bytes', body] : ['form', pairs]
  }
  if (fields === undefined) {
    // Most other JSON only has whitespace to drop or members to sort: no value is built.
    const canonical = canonicalJsonText(text)
    if (canonical !== undefined) return ['json', canonical]
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return ['bytes', body]
  }
  if (fields !== undefined) parsed = pickFields(parsed, fields)
  try {
    return ['json', canonicalize(parsed) ?? 'null']
  } catch {
    // JSON that parses but that RFC 8785 refuses (a lone surrogate, a number beyond
    // doubles such as 1e400, nesting deeper than the canonicaliser recurses) is
    // compared as bytes, like JSON that does not parse: client input never fails here.
    return ['bytes', body]
  }
}

// The media type without parameters, lower case; the usual header needs no work.
function mediaType(contentType: string | null | undefined): string {
  if (contentType === 'application/json') return contentType
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase()
}

/**
 * The pairs of a query or form, sorted by name only: the sort is stable, so the values
 * of a repeated name keep their order (the first wins, or they make an array in order,
 * depending on the framework). With unique names this is the encoding of the first
 * release, so its stored fingerprints still match. Undefined when a name or value
 * decodes to U+FFFD: its escape may not have been UTF-8 (`%E9`, `%E8`), and two
 * different requests would decode alike, so the caller compares the text as sent.
 */
function canonicalPairs(text: string, fields: readonly string[] | undefined): string | undefined {
  let pairs = [...new URLSearchParams(text)]
  if (fields !== undefined) pairs = pairs.filter(([name]) => fields.includes(name))
  for (const [name, value] of pairs) {
    if (name.includes('\uFFFD') || value.includes('\uFFFD')) return undefined
  }
  pairs.sort(([a], [b]) => compare(a, b))
  // JSON of the pair list keeps names and values unambiguous whatever they contain.
  return JSON.stringify(pairs)
}

/**
 * A multipart body as its media type and the pieces between its delimiters (RFC 2046
 * §5.1.1: the preamble, each part's header lines and bytes, and what follows the close
 * delimiter), so that only the boundary, which a client picks anew on every send, does
 * not count. Nothing is decoded: the pieces are the bytes as sent. Undefined (compare
 * the bytes) when the media type does not parse, names no boundary, or the body holds
 * no delimiter.
 */
function multipartParts(body: Uint8Array | string, contentType: string): Normalised | undefined {
  let essence: string
  let boundary: string | null
  try {
    const type = new MIMEType(contentType)
    essence = type.essence
    boundary = type.params.get('boundary')
  } catch {
    return undefined
  }
  if (!boundary) return undefined
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  // Header values are byte strings: latin1 gives the boundary's bytes back.
  const delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1')
  const pieces: Uint8Array[] = []
  let start: number
  // The first delimiter may open the body without the CRLF before it.
  if (bytes.subarray(0, delimiter.length - 2).equals(delimiter.subarray(2))) {
    pieces.push(bytes.subarray(0, 0))
    start = delimiter.length - 2
  } else {
    const first = bytes.indexOf(delimiter)
    if (first === -1) return undefined
    pieces.push(bytes.subarray(0, first))
    start = first + delimiter.length
  }
  for (let at = bytes.indexOf(delimiter, start); at !== -1; at = bytes.indexOf(delimiter, start)) {
    pieces.push(bytes.subarray(start, at))
    start = at + delimiter.length
  }
  pieces.push(bytes.subarray(start))
  return ['multipart', essence, ...pieces]
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

// Missing fields are left out, so a field that is absent and one that is null differ.
function pickFields(value: unknown, fields: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = Object.create(null)
  for (const path of fields) {
    let current: unknown = value
    let found = true
    for (const segment of path.split('.')) {
      if (current !== null && typeof current === 'object' && Object.hasOwn(current, segment)) {
        current = (current as Record<string, unknown>)[segment]
      } else {
        found = false
        break
      }
    }
    if (found) picked[path] = current
  }
  return picked
}
