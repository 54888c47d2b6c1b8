import { createHash } from 'node:crypto'
import { InvalidOptionError } from '../errors/invalid-option.js'
import { assertWellFormed } from '../identity.js'

// Bumped if the encoding ever changes, so old and new derived keys never collide.
const VERSION = 'idem-derive-v1'

/**
 * A stable idempotency key for a downstream call made on behalf of `(scope, key)`:
 * SHA-256 over the length-prefixed scope, key and `name`, as 64 lowercase hex
 * characters (a valid idempotency key anywhere that accepts 1–255 visible ASCII).
 * The same inputs give the same key in every process and after every takeover, so a
 * payment provider that dedupes by its own idempotency keys sees a retried charge as
 * the same charge. Different names, keys or scopes never share a derived key: a part
 * that is not well-formed UTF-16 is refused, since its UTF-8 bytes would be another's.
 *
 * @throws InvalidOptionError for a scope, key or name with a lone surrogate
 * @example
 * await stripe.charges.create(params, { idempotencyKey: deriveKey('acct_1', 'order-42', 'charge') })
 */
export function deriveKey(scope: string, key: string, name: string): string {
  assertWellFormed('deriveKey: "scope"', scope, InvalidOptionError)
  assertWellFormed('deriveKey: "key"', key, InvalidOptionError)
  assertWellFormed('deriveKey: "name"', name, InvalidOptionError)
  const hash = createHash('sha256')
  for (const part of [VERSION, scope, key, name]) {
    // Length-prefixing makes the encoding unambiguous: ("a:b","c") ≠ ("a","b:c").
    const bytes = Buffer.from(part, 'utf8')
    hash.update(`${bytes.byteLength}:`)
    hash.update(bytes)
  }
  return hash.digest('hex')
}
