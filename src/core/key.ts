import { parseItem } from 'structured-headers'
import { InvalidKeyError } from './errors/invalid-key.js'
import { MissingKeyError } from './errors/missing-key.js'
import { assertKnownOptions, optionNames } from './validate.js'

/** The longest key accepted, in characters (DESIGN: 1–255 visible ASCII). */
export const MAX_KEY_LENGTH = 255

const VISIBLE_ASCII = /^[\x21-\x7e]+$/

// A bare (unquoted) key may not carry the characters that would make it a list,
// parameters or a quoted string in RFC 9651 terms.
const BARE_KEY = /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+$/

/**
 * One string for a `(scope, key)` pair, for in-process maps and locks. Length-prefixing
 * keeps ("ab", "c") and ("a", "bc") apart.
 */
export function keyId(scope: string, key: string): string {
  return `${scope.length}:${scope}${key}`
}

/** How strictly `parseIdempotencyKey` reads the header. */
export interface ParseKeyOptions {
  /** Accept only RFC 9651 sf-strings (`"…"`); bare values are rejected. @default false */
  strict?: boolean
}

const PARSE_OPTIONS = optionNames<ParseKeyOptions>({ strict: true })

/** Whether `key` has the key syntax: 1–255 visible ASCII characters. `assertValidKey` says what is wrong instead. */
export function isKeySyntax(key: string): boolean {
  return key.length <= MAX_KEY_LENGTH && VISIBLE_ASCII.test(key)
}

/**
 * Checks that `key` is 1–255 visible ASCII characters, the syntax every front end
 * shares (HTTP header, queue message id, engine call).
 * @throws InvalidKeyError naming what is wrong.
 * @example
 * assertValidKey(message.id) // throws InvalidKeyError for '' or a 300-character id
 */
export function assertValidKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') throw new InvalidKeyError(`Idempotency key must be a string, got ${typeof key}`)
  if (key.length === 0) throw new InvalidKeyError('Idempotency key is empty')
  if (key.length > MAX_KEY_LENGTH) {
    throw new InvalidKeyError(`Idempotency key is ${key.length} characters long; the limit is ${MAX_KEY_LENGTH}`)
  }
  if (!VISIBLE_ASCII.test(key)) {
    throw new InvalidKeyError('Idempotency key may contain only visible ASCII characters (0x21–0x7E)')
  }
}

/**
 * Reads an `Idempotency-Key` header value. The value must be a single RFC 9651
 * sf-string; unless `strict`, a bare value (as Stripe-style clients send) is accepted
 * too. Two header fields arrive joined by a comma and are rejected like any list.
 *
 * @param value the header value, `null`/`undefined` when absent, or every field's value
 * @returns the key
 * @throws MissingKeyError when there is no header, InvalidKeyError when it is malformed, InvalidOptionError for an option it does not know
 * @example parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"') // → '8e03978e-…'
 */
export function parseIdempotencyKey(value: string | readonly string[] | null | undefined, options: ParseKeyOptions = {}): string {
  assertKnownOptions('parseIdempotencyKey', options, PARSE_OPTIONS)
  return parseKeyHeader(value, options.strict ?? false)
}

/**
 * `parseIdempotencyKey` with `strict` given directly, for the middleware's request path:
 * no options object to make and check per request.
 */
export function parseKeyHeader(value: string | readonly string[] | null | undefined, strict: boolean): string {
  if (value === null || value === undefined) throw new MissingKeyError('The Idempotency-Key header is missing')
  if (typeof value !== 'string') {
    if (value.length === 0) throw new MissingKeyError('The Idempotency-Key header is missing')
    if (value.length > 1) throw new InvalidKeyError('Idempotency-Key must be sent once; it was sent in several header fields')
    value = value[0] as string
  }
  const text = value.trim()
  if (text.length === 0) throw new InvalidKeyError('The Idempotency-Key header is empty')
  if (text.startsWith('"')) return parseSfString(text)
  if (strict) throw new InvalidKeyError('Idempotency-Key must be a quoted sf-string ("…") in strict mode')
  if (!BARE_KEY.test(text)) {
    throw new InvalidKeyError(
      'Idempotency-Key must be one sf-string; a bare key may not contain spaces, commas, semicolons, quotes or backslashes',
    )
  }
  assertValidKey(text)
  return text
}

function parseSfString(text: string): string {
  let item
  try {
    item = parseItem(text)
  } catch (cause) {
    throw new InvalidKeyError('Idempotency-Key is not a single RFC 9651 sf-string', { cause })
  }
  const [bare, params] = item
  if (typeof bare !== 'string') throw new InvalidKeyError('Idempotency-Key must be an sf-string')
  if (params.size > 0) throw new InvalidKeyError('Idempotency-Key may not carry parameters')
  assertValidKey(bare)
  return bare
}
