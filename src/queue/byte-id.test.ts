import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { idFromBytes } from './byte-id.js'

describe('idFromBytes', () => {
  it('reads UTF-8 as text, and anything else (or text starting with hex:) as hex:<bytes>', () => {
    expect(idFromBytes(Buffer.from('order-42'))).toBe('order-42')
    expect(idFromBytes(Buffer.from('évènement 😀'))).toBe('évènement 😀')
    expect(idFromBytes(Uint8Array.of(0xff, 0x01))).toBe('hex:ff01')
    expect(idFromBytes(Uint8Array.of(0xfe, 0x01))).toBe('hex:fe01')
    // The text "hex:ff01" is not the bytes ff01.
    expect(idFromBytes(Buffer.from('hex:ff01'))).toBe('hex:6865783a66663031')
    // A byte order mark is part of the id, and an encoded lone surrogate is not UTF-8.
    expect(idFromBytes(Buffer.from('\ufeffa'))).toBe('\ufeffa')
    expect(idFromBytes(Uint8Array.of(0xed, 0xa0, 0x80))).toBe('hex:eda080')
    expect(idFromBytes(Buffer.from([0x00, 0x41]).subarray(1))).toBe('A')
  })

  it('property: different bytes never give one id, and every id is well-formed', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), fc.uint8Array({ maxLength: 12 }), (a, b) => {
        const [x, y] = [idFromBytes(a), idFromBytes(b)]
        expect(x.isWellFormed()).toBe(true)
        expect(x === y).toBe(Buffer.from(a).equals(Buffer.from(b)))
      }),
      { numRuns: 20_000 },
    )
  })
})
