import { InvalidKeyError } from './errors/invalid-key.js'
import { InvalidOptionError } from './errors/invalid-option.js'

/**
 * The one place that checks every string that becomes part of a stored identity: a
 * scope, a message id, a step name, a topic, a dedupe key, a memo name, a once gate, a
 * consumer name; and keys, which are stricter still (visible ASCII, `assertValidKey`).
 *
 * Postgres, Redis and DynamoDB keep text as UTF-8, and so do the hashes of long ids and
 * derived keys; a lone surrogate has no UTF-8 form, and the encoders write U+FFFD in its
 * place, so `"t\ud800"` and `"t\udc00"` would become one identity (tenant B would be
 * replayed tenant A's response). SQLite and the memory store would keep them apart, so
 * the same call would behave differently per store. Such strings are refused instead,
 * on every store alike, before anything is stored.
 *
 * Cheap enough for every request: a length, an `includes` and one native `isWellFormed`.
 */

// The fault of text with a lone surrogate, as every refusal words it.
const NOT_WELL_FORMED = 'is not well-formed UTF-16 (it holds a lone surrogate, which UTF-8 turns into U+FFFD like any other)'

/** An error class the checks throw: `InvalidKeyError` or `InvalidOptionError`. */
type Refusal = new (message: string) => Error

/**
 * Throws `refuse` naming `field` unless `value` is a string of 1–`max` characters,
 * without NUL (Postgres text cannot hold it), well-formed UTF-16.
 * @param field how the error names the value, e.g. `memo: "name"`
 * @param max the longest accepted, in UTF-16 code units (`string.length`)
 * @param refuse `InvalidKeyError` for what a client may send (the client's mistake, to any front end),
 *   `InvalidOptionError` for what the code passes
 * @example assertIdentity('memo: "name"', name, 200, InvalidOptionError)
 */
export function assertIdentity(field: string, value: unknown, max: number, refuse: Refusal): asserts value is string {
  const fault = identityFault(value, max)
  if (fault !== undefined) throw new refuse(`${field} ${fault}; it must be 1–${max} characters, without NUL, well-formed UTF-16`)
}

/**
 * Throws `refuse` naming `field` when `text` is not well-formed UTF-16: for text that is
 * hashed as UTF-8 rather than stored (message ids), of any length, NUL allowed.
 * @example assertWellFormed(`message id ${JSON.stringify(id)}`, id, InvalidKeyError)
 */
export function assertWellFormed(field: string, text: string, refuse: Refusal): void {
  if (!text.isWellFormed()) throw new refuse(`${field} ${NOT_WELL_FORMED}`)
}

function identityFault(value: unknown, max: number): string | undefined {
  if (typeof value !== 'string') return `is not a string (got ${value === null ? 'null' : typeof value})`
  if (value.length === 0) return 'is empty'
  if (value.length > max) return `is ${value.length} characters long`
  if (value.includes('\0')) return 'contains NUL'
  return value.isWellFormed() ? undefined : NOT_WELL_FORMED
}

const MAX_SCOPE_LENGTH = 1024

/**
 * Checks a scope: a string (else the code is misconfigured) of 1–1024 characters without
 * NUL, well-formed UTF-16. A string that fails is refused like a malformed key (the
 * client's mistake): it comes from the principal, which what a client sends may shape.
 * @throws InvalidOptionError when the scope is not a string, InvalidKeyError when it cannot identify a call
 */
export function assertScope(scope: unknown): asserts scope is string {
  if (typeof scope !== 'string') {
    throw new InvalidOptionError(`run: option "scope" must be a string from the server-side principal, got ${scope === null ? 'null' : typeof scope}`)
  }
  assertIdentity('run: "scope"', scope, MAX_SCOPE_LENGTH, InvalidKeyError)
}

declare const checked: unique symbol

/** A scope `checkedScope` passed: an engine's checked call (`CheckedCall`) takes it as it is. */
export type CheckedScope = string & { readonly [checked]: 'scope' }

/** A key `checkedKey` passed: an engine's checked call (`CheckedCall`) takes it as it is. */
export type CheckedKey = string & { readonly [checked]: 'key' }

/**
 * `scope` checked as `assertScope` checks it, typed as checked: what a front end hands an
 * engine's checked call, once per call.
 * @example const scope = checkedScope(await scopeOf(request))
 */
export function checkedScope(scope: unknown): CheckedScope {
  assertScope(scope)
  return scope as CheckedScope
}

/** The longest key accepted, in characters (DESIGN: 1–255 visible ASCII). */
export const MAX_KEY_LENGTH = 255

const VISIBLE_ASCII = /^[\x21-\x7e]+$/


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

/**
 * `key` checked as `assertValidKey` checks it, typed as checked: the key of an engine's
 * checked call (a front end's parsed key), checked here once.
 * @example const key = checkedKey(text)
 */
export function checkedKey(key: unknown): CheckedKey {
  assertValidKey(key)
  return key as CheckedKey
}
