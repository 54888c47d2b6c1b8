// What every HMAC-SHA256 scheme shares: its secrets checked once at construction, the
// keys made once, the digest of the signed parts, signatures decoded strictly and
// compared in constant time, the timestamp window, and refusals that name a check.
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertDuration } from '../../core/errors/option-checks.js'
import type { WebhookCheck, WebhookDelivery, WebhookVerification } from './verifier.js'

/** One secret, or several while a secret is rotated: a delivery signed with any of them verifies. */
export type WebhookSecrets = string | readonly string[]

/** The most secrets one verifier takes: a rotation needs two; a few more is a mistake. */
const MAX_SECRETS = 10

/** Bytes of an HMAC-SHA256 digest. */
const DIGEST_BYTES = 32

/**
 * The secrets of option `secret` as HMAC keys, checked without ever showing one: each a
 * non-empty string without whitespace (a trailing newline from an env file is the
 * usual way a right secret fails every delivery), then made a key by `keyOf`, which
 * throws a message of its own for a secret of the wrong shape.
 * @throws InvalidOptionError naming the option (and its index, for an array)
 */
export function secretKeys(caller: string, value: unknown, keyOf: (secret: string) => Uint8Array | string): readonly KeyObject[] {
  const option = `${caller}: option "secret"`
  const list: readonly unknown[] = typeof value === 'string' ? [value] : Array.isArray(value) ? value : []
  if (list.length === 0 || list.length > MAX_SECRETS) {
    throw new InvalidOptionError(`${option} must be the signing secret, or an array of 1 to ${MAX_SECRETS} of them while one is rotated`)
  }
  return list.map((secret, index) => {
    const name = typeof value === 'string' ? option : `${option}[${index}]`
    if (typeof secret !== 'string' || secret.length === 0) throw new InvalidOptionError(`${name} must be a non-empty string`)
    if (/\s/.test(secret)) throw new InvalidOptionError(`${name} contains whitespace (a newline from an env file?); a signing secret has none`)
    let key: Uint8Array | string
    try {
      key = keyOf(secret)
    } catch (error) {
      throw new InvalidOptionError(`${name} ${error instanceof Error ? error.message : String(error)}`)
    }
    return createSecretKey(typeof key === 'string' ? Buffer.from(key, 'utf8') : key)
  })
}

/**
 * Checks option `toleranceMs`: how far a signed timestamp may be from this clock, either
 * way, from one second to `MAX_DURATION_MS`.
 * @throws InvalidOptionError naming the option
 */
export function assertTolerance(caller: string, value: unknown): asserts value is number {
  assertDuration(`${caller}: option "toleranceMs"`, value, 1_000)
}

/** HMAC-SHA256 of the parts, in order, under one key: the signed content is never copied into one buffer. */
function hmac(key: KeyObject, parts: ReadonlyArray<string | Uint8Array>): Buffer {
  const mac = createHmac('sha256', key)
  for (const part of parts) mac.update(part)
  return mac.digest()
}

/** A hex signature as digest bytes, or undefined unless it is exactly 64 hex digits (Buffer's own decoding stops quietly at the first bad one). */
export function hexDigest(text: string): Buffer | undefined {
  return /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : undefined
}

/** A base64 signature as digest bytes, or undefined unless it is exactly 32 bytes in padded base64. */
export function base64Digest(text: string): Buffer | undefined {
  return /^[A-Za-z0-9+/]{43}=$/.test(text) ? Buffer.from(text, 'base64') : undefined
}

/**
 * True when any signature is the HMAC of the signed parts under any key. Every
 * comparison is `timingSafeEqual` on two digests of the same length, so the time taken
 * says nothing about how much of a guess was right.
 */
export function anySignatureMatches(keys: readonly KeyObject[], parts: ReadonlyArray<string | Uint8Array>, signatures: readonly Buffer[]): boolean {
  for (const key of keys) {
    const expected = hmac(key, parts)
    for (const signature of signatures) {
      if (signature.length === DIGEST_BYTES && timingSafeEqual(signature, expected)) return true
    }
  }
  return false
}

/**
 * A header's value, or undefined when it is absent or empty. Repeated field lines (an
 * array, as Node's types allow) are combined with ", " as HTTP combines them.
 */
export function headerOf(delivery: WebhookDelivery, name: string): string | undefined {
  const found = delivery.header(name)
  const value = typeof found === 'string' ? found : Array.isArray(found) ? found.join(', ') : undefined
  return value !== undefined && value.length > 0 ? value : undefined
}

/** A refusal naming the check that failed. */
export function refused(check: WebhookCheck, detail: string): WebhookVerification {
  return { status: 'refused', check, detail }
}

/** A delivery whose signature verified, with its event id if the scheme gives one. */
export function verified(eventId: string | undefined): WebhookVerification {
  return { status: 'verified', eventId }
}

/** A signed handshake of the provider's: answered 200 with `body` as `contentType`, nothing recorded. */
export function handshake(contentType: string, body: string): WebhookVerification {
  return { status: 'handshake', reply: { contentType, body } }
}

/**
 * The timestamp window: a refusal when `header`'s value is not whole Unix seconds, or is
 * further than `toleranceMs` from the delivery's clock either way; else undefined. A
 * signed delivery replayed after the window is refused even if its event id was never
 * seen.
 */
export function outsideWindow(delivery: WebhookDelivery, header: string, seconds: string, toleranceMs: number): WebhookVerification | undefined {
  if (!/^\d{1,12}$/.test(seconds)) return refused('malformed-header', `${header} must be whole Unix seconds`)
  const now = (delivery.now ?? Date.now)()
  const age = now - Number(seconds) * 1000
  const window = `${toleranceMs / 1000} s`
  if (age > toleranceMs) return refused('stale-timestamp', `${header} is more than ${window} old: a replay, or a delivery held too long`)
  if (-age > toleranceMs) return refused('future-timestamp', `${header} is more than ${window} ahead of this server's clock`)
  return undefined
}

/** The body parsed as a JSON object (not an array, not a scalar), or undefined when it is not one. */
export function jsonObject(body: Uint8Array): object | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'))
  } catch {
    return undefined
  }
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : undefined
}

/** The object's own string field `name`, if it has a non-empty one (never one inherited from its prototype). */
export function stringField(object: object | undefined, name: string): string | undefined {
  if (object === undefined) return undefined
  const value: unknown = Object.getOwnPropertyDescriptor(object, name)?.value
  return typeof value === 'string' && value.length > 0 ? value : undefined
}

/** The JSON body's string field `name`, if the body is a JSON object that has one. */
export function jsonField(body: Uint8Array, name: string): string | undefined {
  return stringField(jsonObject(body), name)
}
