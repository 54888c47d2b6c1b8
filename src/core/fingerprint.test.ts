import { describe, expect, it } from 'vitest'
import { fingerprintValue } from './fingerprint.js'

describe('fingerprintValue', () => {
  it('is canonical and refuses values without a JSON form', () => {
    expect(fingerprintValue({ a: 1, b: [1, 2] })).toBe(fingerprintValue({ b: [1, 2], a: 1 }))
    expect(fingerprintValue({ a: 1 })).not.toBe(fingerprintValue({ a: 2 }))
    expect(() => fingerprintValue(undefined)).toThrow(TypeError)
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
})
