/**
 * Canonical JSON made from JSON text (RFC 8785), without building the parsed value: for
 * a body that is JSON but not canonical already (`isCanonicalJson`, fingerprint.ts, tells
 * that of bytes).
 */
import { fixedIsCanonical, JSON_CODES, MAX_DEPTH } from './fingerprint.js'

const { QUOTE, BACKSLASH, COMMA, COLON, MINUS, DOT, ZERO, NINE, OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY } = JSON_CODES

/**
 * The RFC 8785 form of the JSON `text`, exactly as `canonicalize(JSON.parse(text))`
 * writes it, without building the parsed value: one pass that keeps the text of strings
 * and numbers already canonical, sorts the members of objects whose names are out of
 * order, and drops whitespace. Undefined when the long way has to decide: text that is
 * not JSON, a repeated name, a lone surrogate, a number beyond doubles, nesting deeper
 * than `MAX_DEPTH` (the long way refuses some of these, and its answer stays the answer).
 */
export function canonicalJsonText(text: string): string | undefined {
  const cursor: Cursor = { text, at: 0, value: '' }
  skipSpace(cursor)
  const canonical = readValue(cursor, 0)
  if (canonical === undefined) return undefined
  skipSpace(cursor)
  return cursor.at === text.length ? canonical : undefined
}

interface Cursor {
  readonly text: string
  /** The next character to read. */
  at: number
  /** The value of the string read last (its canonical text is what readString returns). */
  value: string
}

function skipSpace(cursor: Cursor): void {
  const { text } = cursor
  let at = cursor.at
  for (;;) {
    const code = text.charCodeAt(at)
    if (code !== 0x20 && code !== 0x0a && code !== 0x0d && code !== 0x09) break
    at++
  }
  cursor.at = at
}

function readValue(cursor: Cursor, depth: number): string | undefined {
  const { text } = cursor
  const at = cursor.at
  switch (text.charCodeAt(at)) {
    case OPEN_OBJECT:
      return depth < MAX_DEPTH ? readObject(cursor, depth + 1) : undefined
    case OPEN_ARRAY:
      return depth < MAX_DEPTH ? readArray(cursor, depth + 1) : undefined
    case QUOTE:
      return readString(cursor)
    case 0x74: // t
      return readLiteral(cursor, 'true')
    case 0x66: // f
      return readLiteral(cursor, 'false')
    case 0x6e: // n
      return readLiteral(cursor, 'null')
    default:
      return readNumber(cursor)
  }
}

function readLiteral(cursor: Cursor, literal: string): string | undefined {
  if (!cursor.text.startsWith(literal, cursor.at)) return undefined
  cursor.at += literal.length
  return literal
}

function readObject(cursor: Cursor, depth: number): string | undefined {
  const { text } = cursor
  cursor.at++
  skipSpace(cursor)
  if (text.charCodeAt(cursor.at) === CLOSE_OBJECT) {
    cursor.at++
    return '{}'
  }
  // Each member's name, and its canonical text (name, colon, value), in the order read.
  const names: string[] = []
  const members: string[] = []
  let sorted = true
  for (;;) {
    if (text.charCodeAt(cursor.at) !== QUOTE) return undefined
    const name = readString(cursor)
    if (name === undefined) return undefined
    const value = cursor.value
    skipSpace(cursor)
    if (text.charCodeAt(cursor.at) !== COLON) return undefined
    cursor.at++
    skipSpace(cursor)
    const member = readValue(cursor, depth)
    if (member === undefined) return undefined
    if (names.length > 0 && !(names[names.length - 1]! < value)) sorted = false
    names.push(value)
    members.push(name + ':' + member)
    skipSpace(cursor)
    const next = text.charCodeAt(cursor.at++)
    if (next === CLOSE_OBJECT) break
    if (next !== COMMA) return undefined
    skipSpace(cursor)
  }
  // By UTF-16 units, as Array.prototype.sort compares strings (an insertion sort: objects
  // are small); a repeated name (JSON.parse keeps the last) is left to the long way.
  if (!sorted && !sortMembers(names, members)) return undefined
  let canonical = '{' + members[0]!
  for (let i = 1; i < members.length; i++) canonical += ',' + members[i]!
  return canonical + '}'
}

// Sorts the members by name, both lists alike; false when a name is there twice.
function sortMembers(names: string[], members: string[]): boolean {
  for (let i = 1; i < names.length; i++) {
    const name = names[i]!
    const member = members[i]!
    let j = i - 1
    while (j >= 0 && names[j]! > name) {
      names[j + 1] = names[j]!
      members[j + 1] = members[j]!
      j--
    }
    if (j >= 0 && names[j] === name) return false
    names[j + 1] = name
    members[j + 1] = member
  }
  return true
}

function readArray(cursor: Cursor, depth: number): string | undefined {
  const { text } = cursor
  cursor.at++
  skipSpace(cursor)
  if (text.charCodeAt(cursor.at) === CLOSE_ARRAY) {
    cursor.at++
    return '[]'
  }
  let canonical = '['
  for (;;) {
    const value = readValue(cursor, depth)
    if (value === undefined) return undefined
    canonical += value
    skipSpace(cursor)
    const next = text.charCodeAt(cursor.at++)
    if (next === CLOSE_ARRAY) return `${canonical}]`
    if (next !== COMMA) return undefined
    canonical += ','
    skipSpace(cursor)
  }
}

/**
 * A string's canonical text, its value left in `cursor.value`. Without an escape, a
 * control character or a surrogate (the common case) both are slices of the text;
 * otherwise JSON.parse reads it and JSON.stringify writes it, as the long way does.
 */
function readString(cursor: Cursor): string | undefined {
  const { text } = cursor
  const start = cursor.at
  let at = start + 1
  let plain = true
  for (;;) {
    const code = text.charCodeAt(at)
    if (code === QUOTE) break
    if (code === BACKSLASH) {
      plain = false
      at += 2
    } else if (code >= 0x20 && (code < 0xd800 || code > 0xdfff)) {
      at++
    } else if (Number.isNaN(code)) {
      return undefined
    } else {
      plain = false
      at++
    }
  }
  cursor.at = at + 1
  if (plain) {
    cursor.value = text.slice(start + 1, at)
    return text.slice(start, at + 1)
  }
  let value: unknown
  try {
    value = JSON.parse(text.slice(start, at + 1))
  } catch {
    return undefined
  }
  if (typeof value !== 'string' || !value.isWellFormed()) return undefined
  cursor.value = value
  return JSON.stringify(value)
}

// A number by the JSON grammar, written as ECMAScript prints it: as it is when it already
// is (the rule of `number` above), else printed from the double it reads as.
function readNumber(cursor: Cursor): string | undefined {
  const { text } = cursor
  const start = cursor.at
  let at = start
  if (text.charCodeAt(at) === MINUS) at++
  const integer = at
  if (text.charCodeAt(at) === ZERO) at++
  else if (isDigitCode(text.charCodeAt(at))) while (isDigitCode(text.charCodeAt(at))) at++
  else return undefined
  const integerEnd = at
  if (text.charCodeAt(at) === DOT) {
    at++
    if (!isDigitCode(text.charCodeAt(at))) return undefined
    while (isDigitCode(text.charCodeAt(at))) at++
  }
  const fractionEnd = at
  const e = text.charCodeAt(at)
  const exponent = e === 0x65 || e === 0x45
  if (exponent) {
    at++
    const sign = text.charCodeAt(at)
    if (sign === 0x2b || sign === MINUS) at++
    if (!isDigitCode(text.charCodeAt(at))) return undefined
    while (isDigitCode(text.charCodeAt(at))) at++
  }
  cursor.at = at
  const token = text.slice(start, at)
  if (!exponent && fixedIsCanonical(text, start, integer, integerEnd, fractionEnd)) return token
  const number = Number(token)
  return Number.isFinite(number) ? JSON.stringify(number) : undefined
}

function isDigitCode(code: number): boolean {
  return code >= ZERO && code <= NINE
}
