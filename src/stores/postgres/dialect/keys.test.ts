import { describe, expect, it } from 'vitest'
import { readClaim } from './keys.js'

describe('readClaim', () => {
  it('reads the three claims that carry nothing', () => {
    expect(readClaim('n')).toEqual({ state: 'new' })
    expect(readClaim('l')).toEqual({ state: 'locked' })
    expect(readClaim('s')).toEqual({ state: 'stale' })
  })

  it('splits a found record at the fingerprint length, counted in characters as Postgres counts them', () => {
    expect(readClaim('f3:abc{"status":201}')).toEqual({ state: 'found', record: { fingerprint: 'abc', outcome: '{"status":201}' } })
    // Digits and colons in the fingerprint and the outcome; astral characters count once.
    expect(readClaim('f7:1:😀:2é3:4😀')).toEqual({ state: 'found', record: { fingerprint: '1:😀:2é3', outcome: ':4😀' } })
    expect(readClaim('f2:😀😀')).toEqual({ state: 'found', record: { fingerprint: '😀😀', outcome: '' } })
  })

  it('refuses anything else, naming the value', () => {
    for (const value of [undefined, null, '', 'x', 'f', 'f:abc', 'fx:abc', 'f4:abc', 'f-1:abc', 'f1.5:ab', 'f3abc', 7]) {
      expect(() => readClaim(value), String(value)).toThrow(/a key claim returned an unexpected value/)
    }
  })
})
