import canonicalize from 'canonicalize'
import fc from 'fast-check'
import { inspect, isDeepStrictEqual } from 'node:util'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { InvalidOptionError } from './errors/invalid-option.js'
import { fingerprintValue } from './json-data.js'
import { canonicalJson, MAX_JSON_DEPTH } from './json-data.js'

const canonical = (value: unknown): string => canonicalJson(value, 'test: "input"', 'input')

class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

const sparse = [1, , 3]
const cyclic: Record<string, unknown> = { name: 'root' }
cyclic.self = cyclic
const indirect: { child: { parent?: unknown } } = { child: {} }
indirect.child.parent = indirect
const selfToJson = { toJSON(): unknown { return this } }
function nested(levels: number): unknown {
  let value: unknown = 1
  for (let i = 0; i < levels; i++) value = { a: value }
  return value
}

describe('canonicalJson', () => {
  it.each<[string, unknown, RegExp]>([
    ['a bare Map', new Map([['a', 1]]), /^test: "input" must be JSON data: input is a Map$/],
    ['a Map member', { tags: new Map() }, /input\.tags is a Map/],
    ['a Set in an array', [1, new Set([1])], /input\[1\] is a Set/],
    ['a bare URLSearchParams', new URLSearchParams('a=1'), /input is an instance of URLSearchParams, not a plain object/],
    ['a class instance', { at: new Point(1, 2) }, /input\.at is an instance of Point/],
    ['a boxed string', { s: new String('ab') }, /input\.s is an instance of String/],
    ['an Error', { e: new Error('x') }, /input\.e is an instance of Error/],
    ['a Uint8Array', { b: new Uint8Array([1]) }, /input\.b is binary data/],
    ['an ArrayBuffer', { b: new ArrayBuffer(1) }, /input\.b is binary data/],
    ['a function member', { f: () => 1 }, /input\.f is a function/],
    ['a symbol member', { s: Symbol('s') }, /input\.s is a symbol/],
    ['undefined in an array', [undefined], /input\[0\] is undefined \(in an array: pass null\)/],
    ['an empty slot', { list: sparse }, /input\.list\[1\] is an empty slot of a sparse array/],
    ['undefined', undefined, /input is undefined/],
    ['NaN', { n: Number.NaN }, /input\.n is the number NaN/],
    ['Infinity', [Number.POSITIVE_INFINITY], /input\[0\] is the number Infinity/],
    ['a BigInt', { id: 1n }, /input\.id is a BigInt/],
    ['a lone surrogate', { text: 'a\ud800' }, /input\.text is a string that is not well-formed UTF-16/],
    ['a lone surrogate in a name', { 'a\udc00': 1 }, /input\["a\\udc00"\] is a member name that is not well-formed UTF-16/],
    ['an odd member name', { 'two words': [new Map()] }, /input\["two words"\]\[0\] is a Map/],
    ['a toJSON that returns a Set', { v: { toJSON: () => new Set() } }, /input\.v\.toJSON\(\) is a Set/],
    ['a cycle', cyclic, /^test: "input" must be JSON data: input\.self is input again \(a cycle\)$/],
    ['an indirect cycle', indirect, /input\.child\.parent is input again \(a cycle\)/],
    ['a toJSON that returns itself', { v: selfToJson }, /input\.v\.toJSON\(\) is input\.v again \(a cycle\)/],
    ['nesting past the limit', nested(MAX_JSON_DEPTH + 1), new RegExp(`input(\\.a){8}…\\(\\d+ more\\)…\\.a\\.a is nested deeper than ${MAX_JSON_DEPTH} levels`)],
  ])('refuses %s with InvalidOptionError naming its path', (_, value, message) => {
    expect(() => canonical(value)).toThrow(InvalidOptionError)
    expect(() => canonical(value)).toThrow(message)
  })

  it('refuses a deep value as an error, not a stack overflow', () => {
    expect(() => canonical(nested(100_000))).toThrow(InvalidOptionError)
  })

  it('takes what JSON data is: nesting up to the limit, plain objects of any realm, toJSON, members that are undefined', () => {
    expect(canonical(nested(MAX_JSON_DEPTH))).toMatch(/^(\{"a":){1000}1\}{1000}$/)
    expect(canonical(Object.assign(Object.create(null), { b: 1, a: 2 }))).toBe('{"a":2,"b":1}')
    expect(canonical(runInNewContext('({ b: [1], a: { c: null } })'))).toBe('{"a":{"c":null},"b":[1]}')
    expect(canonical({ at: new Date(0), p: { toJSON: () => ({ y: 2, x: 1 }) } })).toBe('{"at":"1970-01-01T00:00:00.000Z","p":{"x":1,"y":2}}')
    expect(canonical({ a: 1, b: undefined })).toBe('{"a":1}')
    expect(canonical([-0, 0])).toBe('[0,0]')
    // The same object twice is not a cycle.
    const shared = { n: 1 }
    expect(canonical([shared, { again: shared }])).toBe('[{"n":1},{"again":{"n":1}}]')
  })
})

// JSON data as generated here: what a JSON parser gives, plus the forms JavaScript adds
// that still are JSON data (a Date, -0, a member that is undefined, a null prototype,
// toJSON), with member names from all of UTF-16 (sorted by code units).
const name = fc.oneof(fc.string({ maxLength: 4 }), fc.string({ unit: 'binary', maxLength: 3 }), fc.constantFrom('', '0', '10', 'toJSON', '__proto__'))
const jsonData = fc.letrec<{ value: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false, -0, 0, 1e21, 1e-7, 5e-324),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.string({ unit: 'binary' }),
    fc.date({ noInvalidDate: true }),
    tie('array'),
    tie('object'),
  ),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc
    .tuple(fc.dictionary(name, fc.oneof(tie('value'), fc.constant(undefined)), { maxKeys: 5 }), fc.boolean())
    .map(([members, bare]) => (bare ? Object.assign(Object.create(null), members) : members)),
})).value

// Values that are not JSON data, each with a JSON-looking twin the old canonicaliser gave
// the same text: a generated pair of small values often differs only in such a leaf.
const notJsonData = fc.constantFrom<unknown>(
  new Map([['a', 1]]),
  new Map(),
  new Set([1]),
  new URLSearchParams('a=1'),
  new Point(1, 2),
  new Uint8Array([1, 2]),
  new Float32Array([0.5]),
  new String('ab'),
  [undefined],
  sparse,
  { f: () => 1 },
  { s: Symbol('s') },
  Symbol('bare'),
  () => 1,
  10n,
  Number.NaN,
  undefined,
  { toJSON: () => new Map() },
)
const twin = fc.constantFrom<unknown>({}, [], [null], { a: 1 }, { 0: 1, 1: 2 }, { 0: 'a', 1: 'b' }, '1970-01-01T00:00:00.000Z', [1, null, 3], null, 0, '')
const small = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    twin,
    notJsonData,
    fc.constantFrom(new Date(0), -0, 1, 'a'),
    fc.array(tie('value'), { maxLength: 2 }),
    fc.dictionary(fc.constantFrom('a', 'b'), tie('value'), { maxKeys: 2 }),
  ),
})).value

// The specification the walk must meet, written as a predicate: JSON data or not.
function isJsonData(v: unknown): boolean {
  if (v === null || typeof v === 'boolean') return true
  if (typeof v === 'string') return v.isWellFormed()
  if (typeof v === 'number') return Number.isFinite(v)
  if (typeof v !== 'object') return false
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return isJsonData((v as { toJSON: () => unknown }).toJSON())
  if (Array.isArray(v)) return Array.from({ length: v.length }, (_, i) => i in v && v[i] !== undefined && isJsonData(v[i])).every(Boolean)
  const prototype: unknown = Object.getPrototypeOf(v)
  if (prototype !== Object.prototype && prototype !== null) return false
  return Object.values(v).every((member) => member === undefined || isJsonData(member))
}

/**
 * What a value means, as a tree that tells apart every two values JSON tells apart (and
 * any two values that are not JSON data and differ, a Map's entries by its inspection),
 * equating only what JSON equates: -0 and 0, a Date and its ISO text (toJSON), a member
 * that is undefined and none, member order.
 */
function meaning(v: unknown): unknown {
  switch (typeof v) {
    case 'number':
      return Number.isNaN(v) ? ['NaN'] : v === 0 ? 0 : v
    case 'string':
    case 'boolean':
      return v
    case 'object':
      break
    default:
      return [typeof v, String(v)]
  }
  if (v === null) return null
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return meaning((v as { toJSON: () => unknown }).toJSON())
  if (Array.isArray(v)) return ['array', ...Array.from({ length: v.length }, (_, i) => (i in v ? meaning(v[i]) : ['hole']))]
  const prototype: unknown = Object.getPrototypeOf(v)
  if (prototype !== Object.prototype && prototype !== null) return ['instance', inspect(v)]
  const members = Object.entries(v).filter(([, member]) => member !== undefined)
  return ['object', ...members.map(([key, member]) => [key, meaning(member)]).sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1))]
}

function fingerprintOrRefusal(v: unknown): string {
  try {
    return fingerprintValue(v)
  } catch (error) {
    if (error instanceof InvalidOptionError) return 'refused'
    throw error
  }
}

describe('property: the fingerprint of a value', () => {
  it('is the one the first release gave, for every JSON data value', () => {
    fc.assert(
      fc.property(jsonData, (v) => {
        expect(canonical(v)).toBe(canonicalize(v))
      }),
      { numRuns: 3_000 },
    )
  })

  it('is refused exactly when the value is not JSON data', () => {
    fc.assert(
      fc.property(fc.oneof(small, jsonData), (v) => {
        expect(fingerprintOrRefusal(v) === 'refused').toBe(!isJsonData(v))
      }),
      { numRuns: 3_000 },
    )
  })

  it('is shared by two values only when their JSON means the same', () => {
    let collisions = 0
    fc.assert(
      fc.property(small, small, (a, b) => {
        const [fa, fb] = [fingerprintOrRefusal(a), fingerprintOrRefusal(b)]
        if (fa === 'refused' || fb === 'refused') return
        if (fa === fb) collisions++
        expect(fa === fb).toBe(isDeepStrictEqual(meaning(a), meaning(b)))
      }),
      { numRuns: 5_000 },
    )
    // The pairs are small enough that many share a fingerprint: the property was tested.
    expect(collisions).toBeGreaterThan(100)
  })
})
