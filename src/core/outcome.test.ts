import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { OutcomeNotSerializableError } from './errors/outcome-not-serializable.js'
import { nonJsonKind } from './json-data.js'
import { parseOutcome, serializeOutcome } from './outcome.js'

describe('serializeOutcome', () => {
  it('stores JSON data exactly, and undefined as null', () => {
    const value = { b: 1, a: [true, null, 'x'], nested: { 'ü': 1.5 } }
    expect(parseOutcome(serializeOutcome(value))).toEqual(value)
    expect(Object.keys(parseOutcome<object>(serializeOutcome(value)))).toEqual(['b', 'a', 'nested'])
    expect(serializeOutcome(undefined)).toBe('null')
    expect(serializeOutcome(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"')
  })

  it('refuses values whose JSON form would differ, naming where they are', () => {
    for (const [value, what] of [
      [{ id: 1n }, /BigInt at "id"/],
      [{ f: () => 1 }, /function at "f"/],
      [{ n: Number.NaN }, /NaN at "n"/],
      [new Map(), /Map at "\(root\)"/],
      [{ s: new Set([1]) }, /Set at "s"/],
      [{ bytes: new Uint8Array(2) }, /binary data/],
    ] as const) {
      expect(() => serializeOutcome(value)).toThrow(OutcomeNotSerializableError)
      expect(() => serializeOutcome(value)).toThrow(what)
    }
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    expect(() => serializeOutcome(cyclic)).toThrow(OutcomeNotSerializableError)
  })

  it('property: writes what JSON.stringify with a check of every value writes, and refuses what it refuses, with the same words', () => {
    const odd = fc.constantFrom<unknown>(
      () => 1,
      Symbol('s'),
      Number.NaN,
      Number.POSITIVE_INFINITY,
      -0,
      10n,
      new Map([[1, 2]]),
      new Set(),
      new Uint8Array([1]),
      new DataView(new ArrayBuffer(1)),
      Buffer.from('hi'),
      new Date(0),
      new Date(Number.NaN),
      Object.assign(new Date(0), { toJSON: () => new Map() }),
      { toJSON: () => ({ n: Number.NaN }) },
      { toJSON: () => 'fine' },
      { toJSON: () => undefined },
      new Number(Number.NaN),
      new String('boxed'),
      Object.create(null),
      Object.create({ inherited: () => 1 }),
      undefined,
      '\ud800',
    )
    const value = fc.letrec((tie) => ({
      any: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 1 }), odd, tie('array'), tie('object')),
      array: fc.array(tie('any'), { maxLength: 4 }),
      object: fc.dictionary(fc.string({ maxLength: 3 }), tie('any'), { maxKeys: 4 }),
    })).any
    const outcome = (f: () => string) => {
      try {
        return { text: f() }
      } catch (error) {
        return { error: error instanceof OutcomeNotSerializableError ? error.message : `not an OutcomeNotSerializableError: ${String(error)}` }
      }
    }
    fc.assert(
      fc.property(value, (v) => {
        expect(outcome(() => serializeOutcome(v))).toEqual(outcome(() => checkedReference(v)))
      }),
      { numRuns: 5_000 },
    )
  })
})

// serializeOutcome as it was before the plain JSON.stringify path: a replacer that checks
// every value (with the one check of what has no JSON form). The current one must agree
// with it on every value.
function checkedReference(value: unknown): string {
  let text: string | undefined
  try {
    text = JSON.stringify(value === undefined ? null : value, function check(this: unknown, key, v: unknown) {
      const found = nonJsonKind(v)
      if (found !== undefined) throw new OutcomeNotSerializableError(`The outcome holds ${found} at ${JSON.stringify(key || '(root)')}; return plain JSON data`)
      return v
    })
  } catch (cause) {
    if (cause instanceof OutcomeNotSerializableError) throw cause
    throw new OutcomeNotSerializableError(`The outcome cannot be serialised: ${(cause as Error).message}`, { cause })
  }
  return text ?? 'null'
}
