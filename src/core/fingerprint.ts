import { hash } from 'node:crypto'
import canonicalize from 'canonicalize'
import { assertKnownOptions, optionNames } from './validate.js'

/** What a request's fingerprint is computed from. */
export interface FingerprintInput {
  /** HTTP method (case-insensitive) or any verb naming the operation. */
  method: string
  /** The route pattern (`/orders/:id`) or path the request was sent to. */
  route: string
  /**
   * The query string, without `?`. Its parameters count like a form body's, as sorted
   * pairs; an empty one counts as none (so a request without one fingerprints as before
   * queries were counted).
   */
  query?: string | undefined
  /** The raw body bytes (or text), if any. */
  body?: Uint8Array | string | undefined
  /** The body's media type; decides how the body is normalised. */
  contentType?: string | null | undefined
  /**
   * Compare only these body fields (dot paths such as `customer.id`), for JSON and
   * form bodies. Other bodies are compared whole.
   */
  fields?: readonly string[] | undefined
}

const INPUT_FIELDS = optionNames<FingerprintInput>({ method: true, route: true, query: true, body: true, contentType: true, fields: true })

// Bumped if the encoding below ever changes, so old and new fingerprints never collide.
const VERSION = 'idem-fingerprint-v1'

/**
 * SHA-256 over method, route, query parameters (as sorted pairs, when there are any:
 * `?dry_run=true` is another request) and body, hex encoded. JSON bodies are canonicalised
 * (RFC 8785), so key order and whitespace do not count as a different payload; form
 * bodies are compared as sorted name/value pairs; anything else (including JSON that
 * does not parse, and JSON the canonicaliser refuses) as bytes. It never throws for
 * any body; it throws `InvalidOptionError` for a field of `input` it does not know.
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
  const [kind, body] = normaliseBody(input)
  const method = input.method.toUpperCase()
  const query = input.query ? canonicalForm(input.query, undefined) : '[]'
  // 'query' can never be a body kind, so the two shapes of the list never collide.
  if (query === '[]') return sha256Hex([VERSION, method, input.route, kind, body])
  return sha256Hex([VERSION, method, input.route, 'query', query, kind, body])
}

/**
 * The fingerprint of any JSON-compatible value (canonicalised with RFC 8785), for
 * engine calls that are not HTTP requests.
 * @throws TypeError when the value has no JSON form (undefined, a function, a BigInt)
 * @example
 * const fingerprint = fingerprintValue({ amount: 5, currency: 'EUR' }) // same for { currency, amount }
 */
export function fingerprintValue(value: unknown): string {
  const text = canonicalize(value)
  if (text === undefined) throw new TypeError('The fingerprint input has no JSON form')
  return sha256Hex([VERSION, 'value', text])
}

/**
 * SHA-256 of the parts, each prefixed with its byte length, so the encoding is
 * unambiguous: ("a|b","c") ≠ ("a","b|c"). The parts are joined first and hashed in one
 * call (crypto.hash), which costs a third of feeding a Hash object part by part.
 */
function sha256Hex(parts: ReadonlyArray<string | Uint8Array>): string {
  let text = ''
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!
    if (typeof part !== 'string') {
      // Raw bytes (a body that is not text) end the list: join as bytes.
      return hash('sha256', Buffer.concat([Buffer.from(`${text}${part.byteLength}:`, 'utf8'), part]), 'hex')
    }
    text += `${Buffer.byteLength(part, 'utf8')}:${part}`
  }
  return hash('sha256', text, 'hex')
}

type Normalised = ['none' | 'json' | 'form' | 'bytes', string | Uint8Array]

const utf8 = new TextDecoder('utf-8', { fatal: true })

function normaliseBody({ body, contentType, fields }: FingerprintInput): Normalised {
  if (body === undefined || body.length === 0) return ['none', '']
  const media = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase()
  const isJson = media === 'application/json' || media.endsWith('+json')
  const isForm = media === 'application/x-www-form-urlencoded'
  if (!isJson && !isForm) return ['bytes', body]
  let text: string
  try {
    text = typeof body === 'string' ? body : utf8.decode(body)
  } catch {
    return ['bytes', body]
  }
  if (isForm) return ['form', canonicalForm(text, fields)]
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

function canonicalForm(text: string, fields: readonly string[] | undefined): string {
  let pairs = [...new URLSearchParams(text)]
  if (fields !== undefined) pairs = pairs.filter(([name]) => fields.includes(name))
  pairs.sort(([an, av], [bn, bv]) => compare(an, bn) || compare(av, bv))
  // JSON of the pair list keeps names and values unambiguous whatever they contain.
  return JSON.stringify(pairs)
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
