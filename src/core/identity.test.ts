import { describe, expect, it } from 'vitest'
import { InvalidKeyError } from './errors/invalid-key.js'
import { InvalidOptionError } from './errors/invalid-option.js'
import { assertIdentity, assertValidKey, assertWellFormed } from './identity.js'

describe('assertIdentity', () => {
  it('accepts 1–max characters without NUL, surrogate pairs included', () => {
    for (const ok of ['a', 'tenant:1', '😀', 'a\ud83d\ude00b', 'x'.repeat(10)]) expect(() => assertIdentity('f', ok, 10, InvalidOptionError)).not.toThrow()
  })

  it('refuses lone surrogates (either half, anywhere, or the halves in the wrong order), naming the field, with the class asked for', () => {
    for (const bad of ['\ud800', '\udc00', 't\ud800', '\udfffx', '\ude00\ud83d']) {
      expect(() => assertIdentity('run: "scope"', bad, 10, InvalidKeyError)).toThrow(InvalidKeyError)
      expect(() => assertIdentity('run: "scope"', bad, 10, InvalidKeyError)).toThrow(/^run: "scope" is not well-formed UTF-16 \(it holds a lone surrogate/)
    }
  })

  it('refuses what is not a string, empty, too long or holds NUL, saying which', () => {
    const cases: Array<[unknown, RegExp]> = [
      [undefined, /^f is not a string \(got undefined\)/],
      [null, /^f is not a string \(got null\)/],
      [7, /^f is not a string \(got number\)/],
      ['', /^f is empty; it must be 1–10 characters, without NUL, well-formed UTF-16$/],
      ['x'.repeat(11), /^f is 11 characters long; it must be 1–10/],
      ['a\0b', /^f contains NUL/],
    ]
    for (const [value, message] of cases) expect(() => assertIdentity('f', value, 10, InvalidOptionError)).toThrow(message)
  })
})

describe('assertWellFormed', () => {
  it('refuses only lone surrogates: any length, NUL allowed (for text that is hashed, not stored)', () => {
    expect(() => assertWellFormed('id', `a\0${'x'.repeat(10_000)}`, InvalidKeyError)).not.toThrow()
    expect(() => assertWellFormed('id', 'evt-\udc00', InvalidKeyError)).toThrow(/^id is not well-formed UTF-16/)
  })
})

describe('assertValidKey', () => {
  it('names what is wrong', () => {
    expect(() => assertValidKey('')).toThrow(/empty/)
    expect(() => assertValidKey('x'.repeat(256))).toThrow(/256 characters long; the limit is 255/)
    expect(() => assertValidKey('naïve')).toThrow(/visible ASCII/)
    expect(() => assertValidKey(42)).toThrow(/must be a string/)
  })
})
