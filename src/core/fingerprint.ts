import { hash } from 'node:crypto'
import { canonicalJson } from './json-data.js'

// Bumped if the encoding below ever changes the meaning of a fingerprint already
// stored, so old and new fingerprints never collide. Each kind of input is tagged
// (`value` here; a front end tags its own, as http/request-fingerprint.ts does each kind
// of request body): a new kind needs no bump.
const VERSION = 'idem-fingerprint-v1'

/**
 * The fingerprint of JSON data (its RFC 8785 canonical form hashed), for engine calls
 * that are not HTTP requests (those are `fingerprintRequest`'s): two values get one
 * fingerprint only when their JSON is the same, whatever the order of their members.
 * Anything that is not JSON data (a Map, a Set, binary data, another class instance
 * without `toJSON`, undefined, a function, a BigInt, a non-finite number, a cycle; see
 * docs/engine.md) is refused rather than hashed as something it is not.
 * @throws InvalidOptionError naming the path to the first part that is not JSON data
 * @example
 * const fingerprint = fingerprintValue({ amount: 5, currency: 'EUR' }) // same for { currency, amount }
 */
export function fingerprintValue(value: unknown): string {
  return fingerprintInput(value, 'fingerprintValue: the value', 'value')
}

/**
 * `fingerprintValue` for a front end, whose error names the value as its caller knows it.
 * @param what how the error names the value, e.g. `memo: "input"`
 * @param root how the path to the offending part starts, e.g. `input`
 */
export function fingerprintInput(value: unknown, what: string, root: string): string {
  return hashFingerprint(VALUE_PART, [canonicalJson(value, what, root)])
}

/**
 * What is hashed of each part: its UTF-8 length, a colon, the part. With the length
 * first the encoding is unambiguous: ("a|b","c") ≠ ("a","b|c").
 */
export function encodedPart(part: string): string {
  return `${Buffer.byteLength(part, 'utf8')}:${part}`
}

const VERSION_PART = encodedPart(VERSION)
const VALUE_PART = encodedPart('value')

/** One part of what a fingerprint is computed from: text, or raw bytes. */
export type FingerprintPart = string | Uint8Array

/**
 * A fingerprint in the v1 encoding: SHA-256 in hex of the version, `head` (parts already
 * encoded with `encodedPart`) and then `parts`, each encoded the same way (bytes by their
 * byte length), hashed in one call (crypto.hash, which costs a third of feeding a Hash
 * object part by part). Every fingerprint idem stores is made here.
 */
export function hashFingerprint(head: string, parts: readonly FingerprintPart[]): string {
  let text = VERSION_PART + head
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!
    // Raw bytes: join the rest as bytes.
    if (typeof part !== 'string') return sha256HexOfBytes(text, parts, i)
    text += encodedPart(part)
  }
  return hash('sha256', text, 'hex')
}

// The same encoding as hashFingerprint, for a list that holds bytes from `from` on:
// written into one buffer and hashed in one call. Text goes in with one write where it
// can (a write costs more than the bytes it copies).
function sha256HexOfBytes(text: string, parts: readonly FingerprintPart[], from: number): string {
  const bytes = parts[from]!
  if (from === parts.length - 1 && typeof bytes !== 'string') {
    // The usual list: text, then the body's bytes.
    const head = `${text}${bytes.byteLength}:`
    const headBytes = Buffer.byteLength(head, 'utf8')
    const joined = Buffer.allocUnsafe(headBytes + bytes.byteLength)
    joined.write(head, 0, headBytes, 'utf8')
    joined.set(bytes, headBytes)
    return hash('sha256', joined, 'hex')
  }
  const chunks: Uint8Array[] = [Buffer.from(text, 'utf8')]
  for (let i = from; i < parts.length; i++) {
    const part = parts[i]!
    const partBytes = typeof part === 'string' ? Buffer.from(part, 'utf8') : part
    chunks.push(Buffer.from(`${partBytes.byteLength}:`, 'latin1'), partBytes)
  }
  return hash('sha256', Buffer.concat(chunks), 'hex')
}
