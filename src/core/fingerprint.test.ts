import { describe, expect, it } from 'vitest'
import { fingerprintValue } from './json-data.js'

describe('fingerprintValue', () => {
  it('is canonical and refuses values without a JSON form', () => {
    expect(fingerprintValue({ a: 1, b: [1, 2] })).toBe(fingerprintValue({ b: [1, 2], a: 1 }))
    expect(fingerprintValue({ a: 1 })).not.toBe(fingerprintValue({ a: 2 }))
    expect(() => fingerprintValue(undefined)).toThrow(/^fingerprintValue: the value must be JSON data: value is undefined$/)
  })
})

// Fingerprints are stored with keys for up to the retention time: a release that
// computed them differently would refuse every retry in flight as a mismatch. This value was
// computed by the first release (v1 encoding) and must never change. (The request
// fingerprint's own are in src/http/request-fingerprint.test.ts.)
describe('the v1 encoding', () => {
  it('gives the same fingerprints as the first release', () => {
    expect(fingerprintValue({ z: [1, 2], a: null })).toBe('4c1aef3e18346d3188d6d0be22ee50fde7089ba85ce78c1c1e5b081f88ca67f9')
  })

  // Computed by main at 819d0e6 (fingerprintValue over the canonicalize package), before
  // non-JSON values were refused: every value here is JSON data, so it keeps its fingerprint.
  class Money {
    constructor(
      readonly amount: number,
      readonly currency: string,
    ) {}
    toJSON(): string {
      return `${this.amount} ${this.currency}`
    }
  }
  it.each<[string, unknown, string]>([
    ['null', null, '6c6df311f8715fcbd1bd948bf63f6739891b423e620bca2c53a21409a78daf4d'],
    ['true', true, '81ebb0d8b3fbb9a00d6f69b7e55dcf8c0851458c7e57183f271a556d59451818'],
    ['a string', 'idem', '05449ab0bc132389f9e730c37c196094de7977aa94bdf6bf4b451b3e66dda989'],
    ['a number', 42, '122ee4e6cacf00cfcab6dccb48ade8d257ae93c3b9e6876f313d5e06b5c00acf'],
    [
      'numbers as ECMAScript prints them',
      [0, -0, 1.5, 0.1, 1e21, 1e-7, 123456789012345680000, 5e-324, -1.7976931348623157e308],
      '73fff5d9b25f93b248f62a0983b5a2eabc220baec8c2d5a5c4bcda92d436e18d',
    ],
    [
      'strings with escapes and astral characters',
      ['line\nbreak', 'quote " backslash \\', '\u0000\u001f\u007f', 'é 😀 \u2028'],
      '81427860c3ee301b40ab5642d5865ce94960b042360ee18183381ddcf5338fc8',
    ],
    [
      'keys sorted by UTF-16 units',
      { z: 1, a: 2, é: 3, '😀': 4, '\uffff': 5, A: 6, '': 7, 10: 8, 9: 9 },
      '4ef0fd17e10226ecc4735bffb9a6ed89468f4d816fceff620972c4a2c568b391',
    ],
    [
      'nested objects and arrays',
      { items: [{ sku: 'A', qty: 1 }, { qty: 2, sku: 'B' }], customer: { name: 'Jane', id: 'c1' }, empty: {}, none: [] },
      '82cf3a89200943513d2655ecf93e5c79e2860828b234c9e57bc9434fee00b221',
    ],
    ['a Date, as its ISO text', { at: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)) }, 'f01d14b83a39236e8378baaab8fc67fae000a0a647832f9e6332fcb8c41109be'],
    ['a null-prototype object', Object.assign(Object.create(null), { b: 2, a: 1 }), '0dcbf7c1681883a403ca8f6f582e343dc4e7e9e9085f056d28c0ef1dbc491298'],
    ['a class with toJSON', { price: new Money(5, 'EUR') }, '6ec12da3cb91129ff048344f94d6e8db1d84fde3362f3b2807395326833838e0'],
    ['an undefined property, dropped', { a: 1, b: undefined }, 'ffd806c0a293630142dc9c2060165f548c906427261fbd268d2bf17d2a027b53'],
  ])('keeps the fingerprint of %s', (_, value, fingerprint) => {
    expect(fingerprintValue(value)).toBe(fingerprint)
  })
})
