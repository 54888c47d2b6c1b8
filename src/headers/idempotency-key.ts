/**
 * The `Idempotency-Key` header field (draft-ietf-httpapi-idempotency-key-header), as both
 * ends speak it: its name, how a key is read from it (one RFC 9651 sf-string) and how one
 * is written into it. The server (`http/`) and the client (`client/`) share this file, so
 * what one writes the other reads; neither may import the other, and the core knows no
 * header, so it lives here.
 */
import { parseItem } from 'structured-headers'
import { InvalidKeyError } from '../core/errors/invalid-key.js'
import { MissingKeyError } from '../core/errors/missing-key.js'
import { checkedKey, type CheckedKey } from '../core/identity.js'
import { assertKnownOptions, optionNames } from '../core/errors/option-checks.js'

/** The request header that carries the key (draft-ietf-httpapi-idempotency-key-header). */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key'

// A bare (unquoted) key may not carry the characters that would make it a list,
// parameters or a quoted string in RFC 9651 terms.
const BARE_KEY = /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+$/

/** How strictly `parseIdempotencyKey` reads the header. */
export interface ParseKeyOptions {
  /** Accept only RFC 9651 sf-strings (`"…"`); bare values are rejected. @default false */
  strict?: boolean
}

const PARSE_OPTIONS = optionNames<ParseKeyOptions>({ strict: true })

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
 * no options object to make and check per request. The key comes back checked
 * (`core/identity.ts`), the one check it gets on its way to the engine.
 */
export function parseKeyHeader(value: string | readonly string[] | null | undefined, strict: boolean): CheckedKey {
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
  return checkedKey(text)
}

function parseSfString(text: string): CheckedKey {
  let item
  try {
    item = parseItem(text)
  } catch (cause) {
    throw new InvalidKeyError('Idempotency-Key is not a single RFC 9651 sf-string', { cause })
  }
  const [bare, params] = item
  if (typeof bare !== 'string') throw new InvalidKeyError('Idempotency-Key must be an sf-string')
  if (params.size > 0) throw new InvalidKeyError('Idempotency-Key may not carry parameters')
  return checkedKey(bare)
}

/**
 * Writes a key as an RFC 9651 sf-string, the form the header is defined with:
 * `"` and `\` are escaped with a backslash (§4.1.6). Keys are visible ASCII, so nothing
 * else needs escaping.
 * @example serializeKeyHeader('abc') // → '"abc"'
 */
export function serializeKeyHeader(key: string): string {
  return `"${key.replace(/[\\"]/g, '\\$&')}"`
}
