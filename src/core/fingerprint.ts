import { isUtf8 } from 'node:buffer'
import { hash } from 'node:crypto'

/**
 * The v1 encoding every fingerprint idem stores is made in (`hashFingerprint`), and the
 * check that lets a request's fingerprint hash a JSON body as sent: bytes that are
 * canonical JSON already (`isCanonicalJson`; other JSON goes through canonical-json.ts).
 */

// Bumped if the encoding below ever changes the meaning of a fingerprint already stored,
// so old and new fingerprints never collide. Each kind of input is tagged (a value by
// json-data.ts, each kind of request body by http/request-fingerprint.ts): a new kind
// needs no bump.
const VERSION = 'idem-fingerprint-v1'

/**
 * What is hashed of each part: its UTF-8 length, a colon, the part. With the length
 * first the encoding is unambiguous: ("a|b","c") ≠ ("a","b|c").
 */
export function encodedPart(part: string): string {
  return `${Buffer.byteLength(part, 'utf8')}:${part}`
}

const VERSION_PART = encodedPart(VERSION)

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

/**
 * Whether `bytes` are JSON already in its RFC 8785 canonical form, exactly as
 * `canonicalize(JSON.parse(text))` would write it: UTF-8, no whitespace between tokens,
 * the members of every object sorted by name and each name once, strings with only the
 * escapes `JSON.stringify` writes, numbers as ECMAScript prints them. One pass over the
 * bytes, nothing allocated: a client that sends canonical JSON costs its fingerprint
 * little more than the hash. False is no verdict on the JSON: the caller then
 * canonicalises it the long way (whitespace to drop, keys to sort, a name with an
 * escape, a nesting deeper than `MAX_DEPTH`, a body that is not JSON at all).
 */
export function isCanonicalJson(bytes: Uint8Array): boolean {
  // Valid UTF-8 holds no surrogate; a byte from 0x80 on can then only be in a string.
  return isUtf8(bytes) && scan(bytes)
}

/** Nesting the canonical readers follow: deeper JSON is left to the long way, whose answer stands. */
export const MAX_DEPTH = 64

const NO = -1

/** The bytes (and UTF-16 units) of JSON's structure that both canonical readers look for. */
export const JSON_CODES = {
  QUOTE: 0x22, BACKSLASH: 0x5c, COMMA: 0x2c, COLON: 0x3a, MINUS: 0x2d, DOT: 0x2e,
  ZERO: 0x30, NINE: 0x39, OPEN_OBJECT: 0x7b, CLOSE_OBJECT: 0x7d, OPEN_ARRAY: 0x5b, CLOSE_ARRAY: 0x5d,
} as const
const { QUOTE, BACKSLASH, COMMA, COLON, MINUS, DOT, ZERO, NINE, OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY } = JSON_CODES

// Bytes a string holds as they are: not a control character, quote or backslash. A name
// holds no character from U+E000 on either (no lead byte from 0xEE), so that its UTF-8
// bytes sort as its UTF-16 units do, which RFC 8785 sorts by.
const PLAIN = new Uint8Array(256).fill(1, 0x20)
PLAIN[QUOTE] = 0
PLAIN[BACKSLASH] = 0
const PLAIN_IN_NAME = PLAIN.slice().fill(0, 0xee)

// The open containers, innermost last: the byte that closes each, and for an object where
// its last name so far starts and ends. The scan runs to its end without yielding, so
// one set serves every call.
const closers = new Uint8Array(MAX_DEPTH)
const nameStarts = new Int32Array(MAX_DEPTH)
const nameEnds = new Int32Array(MAX_DEPTH)

/**
 * One loop over the bytes, without recursion (a call per value would cost as much as
 * the bytes): read a value, then the commas, names and closing brackets after it.
 */
function scan(bytes: Uint8Array): boolean {
  const length = bytes.length
  let at = 0
  let depth = 0
  for (;;) {
    // A value starts at `at`.
    const first = bytes[at]
    if (first === QUOTE) {
      at++
      for (;;) {
        while (at < length && PLAIN[bytes[at]!] === 1) at++
        const byte = bytes[at]
        if (byte === QUOTE) break
        if (byte !== BACKSLASH || !canonicalEscape(bytes, at)) return false
        at += bytes[at + 1] === 0x75 ? 6 : 2
      }
      at++
    } else if (first === OPEN_OBJECT || first === OPEN_ARRAY) {
      if (depth === MAX_DEPTH) return false
      at++
      if (bytes[at] === first + 2) {
        at++ // {} or []
      } else {
        closers[depth] = first + 2
        depth++
        if (first === OPEN_OBJECT) {
          nameStarts[depth - 1] = NO
          at = member(bytes, at, depth - 1)
          if (at === NO) return false
        }
        continue
      }
    } else {
      at = scalar(bytes, at)
      if (at === NO) return false
    }
    // A value ended: what follows closes containers, or leads to the next value.
    for (;;) {
      if (depth === 0) return at === length
      const next = bytes[at++]
      if (next === COMMA) {
        if (closers[depth - 1] === CLOSE_OBJECT) {
          at = member(bytes, at, depth - 1)
          if (at === NO) return false
        }
        break
      }
      if (next !== closers[depth - 1]) return false
      depth--
    }
  }
}

// A literal (true, false, null) or a number at `at`: where it ends, or NO.
function scalar(bytes: Uint8Array, at: number): number {
  switch (bytes[at]) {
    case 0x74: // true
      return bytes[at + 1] === 0x72 && bytes[at + 2] === 0x75 && bytes[at + 3] === 0x65 ? at + 4 : NO
    case 0x66: // false
      return bytes[at + 1] === 0x61 && bytes[at + 2] === 0x6c && bytes[at + 3] === 0x73 && bytes[at + 4] === 0x65 ? at + 5 : NO
    case 0x6e: // null
      return bytes[at + 1] === 0x75 && bytes[at + 2] === 0x6c && bytes[at + 3] === 0x6c ? at + 4 : NO
    default:
      return number(bytes, at)
  }
}

/**
 * A member's name and colon at `at`, in the object at `level`: a string without any
 * escape, sorted after the name before it (bytes compare as the UTF-16 units RFC 8785
 * sorts by, given PLAIN_IN_NAME), and never the same. Returns where its value starts.
 */
function member(bytes: Uint8Array, at: number, level: number): number {
  if (bytes[at] !== QUOTE) return NO
  const start = at
  const length = bytes.length
  at++
  while (at < length && PLAIN_IN_NAME[bytes[at]!] === 1) at++
  if (bytes[at] !== QUOTE || bytes[at + 1] !== COLON) return NO
  const end = at + 1
  const previous = nameStarts[level]!
  if (previous !== NO && !ascending(bytes, previous, nameEnds[level]!, start, end)) return NO
  nameStarts[level] = start
  nameEnds[level] = end
  return end + 1
}

// Whether the quoted name at [from, to) sorts strictly after the one at [start, end).
function ascending(bytes: Uint8Array, start: number, end: number, from: number, to: number): boolean {
  const length = Math.min(end - start, to - from) - 1
  for (let i = 1; i < length; i++) {
    const a = bytes[start + i]!
    const b = bytes[from + i]!
    if (a !== b) return a < b
  }
  // One is a prefix of the other: the shorter sorts first.
  return end - start < to - from
}

// The escape at `at` is one JSON.stringify writes: \" \\ \b \f \n \r \t, or \u00xx in
// lowercase hex for another control character.
function canonicalEscape(bytes: Uint8Array, at: number): boolean {
  switch (bytes[at + 1]) {
    case QUOTE:
    case BACKSLASH:
    case 0x62: // b
    case 0x66: // f
    case 0x6e: // n
    case 0x72: // r
    case 0x74: // t
      return true
    case 0x75: {
      // u
      if (bytes[at + 2] !== ZERO || bytes[at + 3] !== ZERO) return false
      const high = bytes[at + 4]
      const low = bytes[at + 5]!
      const code = (high === ZERO ? 0 : high === 0x31 ? 16 : -256) + (low >= ZERO && low <= NINE ? low - ZERO : low >= 0x61 && low <= 0x66 ? low - 0x61 + 10 : -256)
      return code >= 0 && code !== 0x08 && code !== 0x09 && code !== 0x0a && code !== 0x0c && code !== 0x0d
    }
    default:
      return false
  }
}

/**
 * A number as ECMAScript prints it (RFC 8785 §3.2.2.3). Fixed notation with at most 15
 * significant digits is checked by its digits: any decimal of 15 digits or fewer is the
 * shortest form of the double it reads as, so it prints back as written if it has no
 * redundant zero and lies where ECMAScript prints without an exponent (below 10^21,
 * from 10^-6). Anything else (an exponent, more digits) is printed and compared.
 */
function number(bytes: Uint8Array, start: number): number {
  let at = start
  if (bytes[at] === MINUS) at++
  const integer = at
  if (bytes[at] === ZERO) at++
  else if (isDigit(bytes[at])) while (isDigit(bytes[at])) at++
  else return NO
  const integerEnd = at
  if (bytes[at] === DOT) {
    at++
    if (!isDigit(bytes[at])) return NO
    while (isDigit(bytes[at])) at++
  }
  const fractionEnd = at
  const exponent = bytes[at] === 0x65 || bytes[at] === 0x45
  if (exponent) {
    at++
    if (bytes[at] === 0x2b || bytes[at] === MINUS) at++
    if (!isDigit(bytes[at])) return NO
    while (isDigit(bytes[at])) at++
  }
  if (!exponent && fixedIsCanonical(bytes, start, integer, integerEnd, fractionEnd)) return at
  let text = ''
  for (let i = start; i < at; i++) text += String.fromCharCode(bytes[i]!)
  return String(Number(text)) === text ? at : NO
}

/**
 * Whether the number at [start, fractionEnd) of `source` (bytes or text), in fixed
 * notation, is written as ECMAScript prints it, told by its digits alone: the digits
 * start at `integer` (after any minus), the integer part ends at `integerEnd`.
 */
export function fixedIsCanonical(source: Uint8Array | string, start: number, integer: number, integerEnd: number, fractionEnd: number): boolean {
  const fraction = fractionEnd > integerEnd
  // A redundant zero: a fraction ending in 0 (1.50, 0.0), or a zero with a sign (-0).
  if (fraction && codeAt(source, fractionEnd - 1) === ZERO) return false
  if (!fraction && codeAt(source, integer) === ZERO) return integer === start
  // The significant digits: from the first that is not 0 to the last that is not 0.
  let first = integer
  while (codeAt(source, first) === ZERO || codeAt(source, first) === DOT) first++
  let last = fractionEnd - 1
  while (codeAt(source, last) === ZERO) last--
  const digits = last - first + 1 - (first < integerEnd && last > integerEnd ? 1 : 0)
  const leadingZeros = codeAt(source, integer) === ZERO ? first - integerEnd - 1 : 0
  return digits <= 15 && integerEnd - integer <= 21 && leadingZeros <= 5
}

// A byte of `source`, or a UTF-16 unit of it as text.
function codeAt(source: Uint8Array | string, i: number): number | undefined {
  return typeof source === 'string' ? source.charCodeAt(i) : source[i]
}

function isDigit(byte: number | undefined): boolean {
  return byte !== undefined && byte >= ZERO && byte <= NINE
}
