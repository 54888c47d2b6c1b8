import { InvalidKeyError } from './errors/invalid-key.js'

/** The longest key accepted, in characters (DESIGN: 1–255 visible ASCII). */
export const MAX_KEY_LENGTH = 255

const VISIBLE_ASCII = /^[\x21-\x7e]+$/

/**
 * One string for a `(scope, key)` pair, for in-process maps and locks. Length-prefixing
 * keeps ("ab", "c") and ("a", "bc") apart.
 */
export function keyId(scope: string, key: string): string {
  return `${scope.length}:${scope}${key}`
}

/** Whether `key` has the key syntax: 1–255 visible ASCII characters. `assertValidKey` says what is wrong instead. */
export function isKeySyntax(key: string): boolean {
  return key.length <= MAX_KEY_LENGTH && VISIBLE_ASCII.test(key)
}

/**
 * Checks that `key` is 1–255 visible ASCII characters, the syntax every front end
 * shares (a header's key, a queue message id, an engine call).
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
