import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { InvalidKeyError } from '../core/errors/invalid-key.js'
import { MissingKeyError } from '../core/errors/missing-key.js'
import { assertValidKey } from '../core/identity.js'
import { parseIdempotencyKey } from './idempotency-key.js'

describe('parseIdempotencyKey', () => {
  it('reads an RFC 9651 sf-string', () => {
    expect(parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"')).toBe('8e03978e-40d5-43e8-bc93-6894a57f9324')
    expect(parseIdempotencyKey('  "a\\"b"  ')).toBe('a"b')
  })

  it('accepts bare keys unless strict, including UUIDs that start with a digit', () => {
    expect(parseIdempotencyKey('0190f1b2-7c3a-7def-8123-456789abcdef')).toBe('0190f1b2-7c3a-7def-8123-456789abcdef')
    expect(parseIdempotencyKey('stripe-node-retry-5a1c')).toBe('stripe-node-retry-5a1c')
    expect(() => parseIdempotencyKey('abc', { strict: true })).toThrow(InvalidKeyError)
    expect(parseIdempotencyKey('"abc"', { strict: true })).toBe('abc')
  })

  it('is MissingKeyError when absent and InvalidKeyError when malformed', () => {
    expect(() => parseIdempotencyKey(null)).toThrow(MissingKeyError)
    expect(() => parseIdempotencyKey(undefined)).toThrow(MissingKeyError)
    expect(() => parseIdempotencyKey([])).toThrow(MissingKeyError)
    for (const bad of ['', '   ', '""', '"a", "b"', 'a, b', '"a";p=1', 'a;p=1', 'a b', '"a b"', '"\u00e9"', 'caf\u00e9', '"x', 'x"', '?a=\\b', `"${'k'.repeat(256)}"`, 'k'.repeat(256)]) {
      expect(() => parseIdempotencyKey(bad), JSON.stringify(bad)).toThrow(InvalidKeyError)
    }
    expect(() => parseIdempotencyKey(['"a"', '"a"'])).toThrow(/several header fields/)
  })

  it('accepts exactly 255 characters', () => {
    expect(parseIdempotencyKey(`"${'k'.repeat(255)}"`)).toHaveLength(255)
  })

  it('never throws anything but its two typed errors, and accepted keys are valid', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.boolean(), (value, strict) => {
        try {
          const key = parseIdempotencyKey(value, { strict })
          assertValidKey(key)
        } catch (error) {
          expect(error instanceof InvalidKeyError || error instanceof MissingKeyError).toBe(true)
        }
      }),
      { numRuns: 2000 },
    )
  })

  it('round-trips every valid key through its sf-string form', () => {
    const visible = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 255 })
    fc.assert(
      fc.property(visible, (key) => {
        const quoted = `"${key.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
        expect(parseIdempotencyKey(quoted, { strict: true })).toBe(key)
      }),
    )
  })
})
