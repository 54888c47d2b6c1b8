import { describe, expect, it } from 'vitest'
import { OutcomeNotSerializableError } from './errors/outcome-not-serializable.js'
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
})
