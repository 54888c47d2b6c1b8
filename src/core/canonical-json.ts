import { isUtf8 } from 'node:buffer'

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
  const scan: Scan = { bytes, at: 0, ascii: true }
  if (!value(scan, 0) || scan.at !== bytes.length) return false
  // Every byte from 0x80 on is inside a string; valid UTF-8 holds no surrogate either.
  return scan.ascii || isUtf8(bytes)
}

// Deeper JSON is left to the long way, which refuses what it cannot recurse into: the
// answer for such a body stays what it was.
const MAX_DEPTH = 64

interface Scan {
  readonly bytes: Uint8Array
  /** The next byte to read. */
  at: number
  /** No byte from 0x80 on has been read. */
  ascii: boolean
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const MINUS = 0x2d
const DOT = 0x2e
const ZERO = 0x30
const NINE = 0x39

// ASCII a string holds as it is: not a control character, quote or backslash.
const PLAIN = new Uint8Array(256).fill(1, 0x20, 0x80)
PLAIN[QUOTE] = 0
PLAIN[BACKSLASH] = 0

function value(scan: Scan, depth: number): boolean {
  const { bytes } = scan
  switch (bytes[scan.at]) {
    case 0x7b: // {
      return depth < MAX_DEPTH && object(scan, depth + 1)
    case 0x5b: // [
      return depth < MAX_DEPTH && array(scan, depth + 1)
    case QUOTE:
      return string(scan, false)
    case 0x74: // t
      return literal(scan, 0x72, 0x75, 0x65, -1) // rue
    case 0x66: // f
      return literal(scan, 0x61, 0x6c, 0x73, 0x65) // alse
    case 0x6e: // n
      return literal(scan, 0x75, 0x6c, 0x6c, -1) // ull
    default:
      return number(scan)
  }
}

function object(scan: Scan, depth: number): boolean {
  const { bytes } = scan
  scan.at++
  if (bytes[scan.at] === 0x7d) {
    scan.at++
    return true
  }
  let previous = -1
  let previousEnd = -1
  for (;;) {
    const name = scan.at
    if (bytes[name] !== QUOTE || !string(scan, true)) return false
    // Names compare by their UTF-8 bytes, which sort as their code points do; RFC 8785
    // sorts by UTF-16 units, which differ only past U+E000 (string() sent those back).
    if (previous !== -1 && !ascending(bytes, previous, previousEnd, name, scan.at)) return false
    previous = name
    previousEnd = scan.at
    if (bytes[scan.at] !== COLON) return false
    scan.at++
    if (!value(scan, depth)) return false
    const next = bytes[scan.at]
    scan.at++
    if (next === 0x7d) return true
    if (next !== COMMA) return false
  }
}

function array(scan: Scan, depth: number): boolean {
  const { bytes } = scan
  scan.at++
  if (bytes[scan.at] === 0x5d) {
    scan.at++
    return true
  }
  for (;;) {
    if (!value(scan, depth)) return false
    const next = bytes[scan.at]
    scan.at++
    if (next === 0x5d) return true
    if (next !== COMMA) return false
  }
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

/**
 * A string as `JSON.stringify` writes it: the escapes it writes and no other. A name
 * (`name`) has no escape at all and no character from U+E000 on, so that its bytes sort
 * as its UTF-16 units do.
 */
function string(scan: Scan, name: boolean): boolean {
  const { bytes } = scan
  const length = bytes.length
  let at = scan.at + 1
  for (;;) {
    while (at < length && PLAIN[bytes[at]!] === 1) at++
    if (at >= length) return false
    const byte = bytes[at]!
    if (byte === QUOTE) break
    if (byte >= 0x80) {
      scan.ascii = false
      if (name && byte >= 0xee) return false
      at++
    } else if (byte === BACKSLASH && !name && canonicalEscape(bytes, at)) {
      at += bytes[at + 1] === 0x75 ? 6 : 2
    } else {
      return false
    }
  }
  scan.at = at + 1
  return true
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

function literal(scan: Scan, b1: number, b2: number, b3: number, b4: number): boolean {
  const { bytes } = scan
  const at = scan.at
  if (bytes[at + 1] !== b1 || bytes[at + 2] !== b2 || bytes[at + 3] !== b3) return false
  if (b4 === -1) {
    scan.at = at + 4
    return true
  }
  if (bytes[at + 4] !== b4) return false
  scan.at = at + 5
  return true
}

/**
 * A number as ECMAScript prints it (RFC 8785 §3.2.2.3). Fixed notation with at most 15
 * significant digits is checked by its digits: any decimal of 15 digits or fewer is the
 * shortest form of the double it reads as, so it prints back as written if it has no
 * redundant zero and lies where ECMAScript prints without an exponent (below 10^21,
 * from 10^-6). Anything else (an exponent, more digits) is printed and compared.
 */
function number(scan: Scan): boolean {
  const { bytes } = scan
  const start = scan.at
  let at = start
  if (bytes[at] === MINUS) at++
  const integer = at
  if (bytes[at] === ZERO) at++
  else if (isDigit(bytes[at])) while (isDigit(bytes[at])) at++
  else return false
  const integerEnd = at
  let fractionEnd = at
  if (bytes[at] === DOT) {
    at++
    if (!isDigit(bytes[at])) return false
    while (isDigit(bytes[at])) at++
    fractionEnd = at
  }
  const exponent = bytes[at] === 0x65 || bytes[at] === 0x45
  if (exponent) {
    at++
    if (bytes[at] === 0x2b || bytes[at] === MINUS) at++
    if (!isDigit(bytes[at])) return false
    while (isDigit(bytes[at])) at++
  }
  scan.at = at
  if (!exponent) {
    const fraction = fractionEnd > integerEnd
    // A redundant zero: a fraction ending in 0 (1.50, 0.0), or a zero with a sign (-0).
    if (fraction && bytes[fractionEnd - 1] === ZERO) return false
    if (!fraction && bytes[integer] === ZERO) return integer === start
    // The significant digits: from the first that is not 0 to the last that is not 0.
    let first = integer
    while (bytes[first] === ZERO || bytes[first] === DOT) first++
    let last = fraction ? fractionEnd - 1 : integerEnd - 1
    while (bytes[last] === ZERO) last--
    const digits = last - first + 1 - (first < integerEnd && last > integerEnd ? 1 : 0)
    const leadingZeros = bytes[integer] === ZERO ? first - integerEnd - 1 : 0
    if (digits <= 15 && integerEnd - integer <= 21 && leadingZeros <= 5) return true
  }
  let text = ''
  for (let i = start; i < at; i++) text += String.fromCharCode(bytes[i]!)
  return String(Number(text)) === text
}

function isDigit(byte: number | undefined): boolean {
  return byte !== undefined && byte >= ZERO && byte <= NINE
}
