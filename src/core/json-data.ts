import { InvalidOptionError } from './errors/invalid-option.js'
import { encodedPart, hashFingerprint } from './fingerprint.js'

/**
 * Why `v` itself (not what it holds) has no faithful JSON form, or undefined: JSON.stringify
 * would write a Map, a Set or a buffer as `{}` (or each byte as a member), drop a function
 * or a symbol, write a non-finite number as `null`, and throw on a BigInt. Shared by the
 * outcome (what may be stored) and the canonical form of an input (what may be hashed).
 */
export function nonJsonKind(v: unknown): string | undefined {
  switch (typeof v) {
    case 'bigint':
      return 'a BigInt'
    case 'function':
      return 'a function'
    case 'symbol':
      return 'a symbol'
    case 'number':
      return Number.isFinite(v) ? undefined : `the number ${v}`
    case 'object':
      if (v instanceof Map) return 'a Map'
      if (v instanceof Set) return 'a Set'
      if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return 'binary data (encode it, e.g. as base64)'
      return undefined
    default:
      return undefined
  }
}

/**
 * Nesting idem follows, at most: far beyond any real input, and well inside the stack,
 * so a cycle or a runaway nesting is an error that says so, not a stack overflow.
 */
export const MAX_JSON_DEPTH = 1000

/**
 * The RFC 8785 canonical text of JSON data, exactly as the `canonicalize` package writes
 * it for JSON data (so fingerprints stored by earlier releases still match): members
 * sorted by UTF-16 units, numbers and strings as JSON.stringify writes them. JSON data is
 * null, booleans, finite numbers (`-0` is `0`, as JSON has one zero), well-formed strings,
 * arrays of JSON data, and plain objects (prototype `Object.prototype` or null) whose
 * enumerable string-keyed members are JSON data; a member whose value is `undefined` is
 * absent, as in JSON.stringify. A value with a `toJSON` method stands for what it returns
 * (a Date for its ISO text). Everything else is refused: a Map, a Set, binary data, any
 * other class instance, a function, a symbol, a BigInt, a non-finite number, `undefined`
 * (except as a member) or an empty slot in an array, a lone surrogate, a cycle, nesting
 * deeper than `MAX_JSON_DEPTH`.
 * @param what how the error names the value, e.g. `memo: "input"`
 * @param root how the path to the offending part starts, e.g. `input`
 * @throws InvalidOptionError naming the path to the first part that is not JSON data
 */
export function canonicalJson(value: unknown, what: string, root: string): string {
  try {
    return write(value, 0)
  } catch (error) {
    if (!(error instanceof Unfit)) throw error
    throw new InvalidOptionError(`${what} must be JSON data: ${error.describe(root)}`)
  }
}

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

// The kind tag of a value's fingerprint (a request's are http/request-fingerprint.ts's).
const VALUE_PART = encodedPart('value')

/** What makes a value not JSON data, and where: filled in as the walk unwinds from it. */
class Unfit {
  /** Path segments from the offending part up to the root. */
  readonly segments: string[] = []
  /** The containers on that path, the same order, for telling a cycle from deep nesting. */
  readonly containers: unknown[] = []

  /**
   * @param reason what the offending part is, e.g. `a Map`
   * @param tooDeep whether the walk stopped at `MAX_JSON_DEPTH`, where a cycle is told apart
   */
  constructor(
    readonly reason: string,
    readonly tooDeep = false,
  ) {}

  enter(segment: string, container: unknown): Unfit {
    this.segments.push(segment)
    this.containers.push(container)
    return this
  }

  describe(root: string): string {
    const segments = this.segments.slice().reverse()
    const containers = this.containers.slice().reverse()
    const at = (end: number): string => root + abridged(segments.slice(0, end))
    // Too deep: a container on the path that holds itself, or just deep.
    for (let j = 1; this.tooDeep && j < containers.length; j++) {
      const i = containers.indexOf(containers[j])
      if (i < j) return `${at(j)} is ${at(i)} again (a cycle)`
    }
    return `${at(segments.length)} is ${this.reason}`
  }
}

// A long path keeps its start and its end.
function abridged(segments: readonly string[]): string {
  if (segments.length <= 12) return segments.join('')
  return `${segments.slice(0, 8).join('')}…(${segments.length - 10} more)…${segments.slice(-2).join('')}`
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/

function memberSegment(name: string): string {
  return IDENTIFIER.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`
}

// What JSON.stringify escapes in a string (a quote, a backslash, a control character),
// and surrogates, paired or not: most strings hold none, and are their own text in quotes.
const SPECIAL = /["\\\u0000-\u001f\ud800-\udfff]/

function quoted(text: string, what: string): string {
  if (!SPECIAL.test(text)) return `"${text}"`
  if (!text.isWellFormed()) throw new Unfit(`${what} that is not well-formed UTF-16 (a lone surrogate), which has no JSON text`)
  return JSON.stringify(text)
}

function write(v: unknown, depth: number): string {
  switch (typeof v) {
    case 'string':
      return quoted(v, 'a string')
    case 'number':
      if (!Number.isFinite(v)) throw new Unfit(`the number ${v}`)
      return JSON.stringify(v)
    case 'boolean':
      return v ? 'true' : 'false'
    case 'object':
      if (v === null) return 'null'
      if (depth === MAX_JSON_DEPTH) throw new Unfit(`nested deeper than ${MAX_JSON_DEPTH} levels`, true)
      // toJSON first, even on an array, as the first release did.
      if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return writeToJson(v, depth + 1)
      if (Array.isArray(v)) return writeArray(v, depth + 1)
      return writeObject(v, depth + 1)
    case 'undefined':
      throw new Unfit('undefined')
    default:
      throw new Unfit(nonJsonKind(v) ?? typeof v)
  }
}

// What toJSON returns is written in its place, and is held to the same rules (called
// without a key, as the first release called it).
function writeToJson(v: object, depth: number): string {
  try {
    return write((v as { toJSON: () => unknown }).toJSON(), depth)
  } catch (error) {
    throw error instanceof Unfit ? error.enter('.toJSON()', v) : error
  }
}

function writeArray(array: readonly unknown[], depth: number): string {
  let i = 0
  try {
    let text = '['
    for (; i < array.length; i++) {
      const item = array[i]
      if (item === undefined) throw new Unfit(i in array ? 'undefined (in an array: pass null)' : 'an empty slot of a sparse array')
      text += i === 0 ? write(item, depth) : `,${write(item, depth)}`
    }
    return `${text}]`
  } catch (error) {
    throw error instanceof Unfit ? error.enter(`[${i}]`, array) : error
  }
}

function writeObject(object: object, depth: number): string {
  const prototype: unknown = Object.getPrototypeOf(object)
  if (prototype !== Object.prototype && prototype !== null && !isRootPrototype(prototype)) {
    throw new Unfit(nonJsonKind(object) ?? instanceOf(object))
  }
  const names = Object.keys(object).sort()
  let name = ''
  try {
    let text = '{'
    for (let i = 0; i < names.length; i++) {
      name = names[i]!
      const member = (object as Record<string, unknown>)[name]
      if (member === undefined) continue
      text += `${text.length === 1 ? '' : ','}${quoted(name, 'a member name')}:${write(member, depth)}`
    }
    return `${text}}`
  } catch (error) {
    throw error instanceof Unfit ? error.enter(memberSegment(name), object) : error
  }
}

// Another realm's Object.prototype (a value made in a vm context): a plain object too.
function isRootPrototype(prototype: unknown): boolean {
  return typeof prototype === 'object' && Object.getPrototypeOf(prototype) === null
}

function instanceOf(object: object): string {
  const name: unknown = (object as { constructor?: { name?: unknown } }).constructor?.name
  const shown = typeof name === 'string' && name.length > 0 ? name : 'a class'
  return `an instance of ${shown}, not a plain object (pass its data as a plain object, or give the class a toJSON)`
}
