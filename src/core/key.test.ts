import { describe, expect, it } from 'vitest'
import { assertValidKey } from './key.js'

describe('assertValidKey', () => {
  it('names what is wrong', () => {
    expect(() => assertValidKey('')).toThrow(/empty/)
    expect(() => assertValidKey('x'.repeat(256))).toThrow(/256 characters long; the limit is 255/)
    expect(() => assertValidKey('naïve')).toThrow(/visible ASCII/)
    expect(() => assertValidKey(42)).toThrow(/must be a string/)
  })
})
