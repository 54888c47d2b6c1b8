import { describe, expect, it } from 'vitest'
import { InvalidOptionError } from './invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, MAX_DURATION_MS, optionNames } from './option-checks.js'

describe('assertDuration', () => {
  it('accepts whole milliseconds from min to 2^31 - 1, and names the option otherwise', () => {
    expect(() => assertDuration('f: option "x"', 0)).not.toThrow()
    expect(() => assertDuration('f: option "x"', MAX_DURATION_MS)).not.toThrow()
    for (const bad of [MAX_DURATION_MS + 1, 3e9, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '10', null, undefined]) {
      expect(() => assertDuration('f: option "x"', bad)).toThrow(InvalidOptionError)
      expect(() => assertDuration('f: option "x"', bad)).toThrow(/^f: option "x" must be a whole number of milliseconds from 0 to 2147483647/)
    }
    expect(() => assertDuration('f: option "x"', 1, 2)).toThrow('from 2 to')
  })
})

describe('assertCount and assertName', () => {
  it('bound counts and names', () => {
    expect(() => assertCount('c', 5, 1, 5)).not.toThrow()
    expect(() => assertCount('c', 6, 1, 5)).toThrow('c must be a whole number from 1 to 5, got 6')
    expect(() => assertName('n', 'ok')).not.toThrow()
    expect(() => assertName('n', 'a\0b')).toThrow(InvalidOptionError)
    expect(() => assertName('n', 'x'.repeat(201))).toThrow('1–200 characters')
  })
})

describe('assertKnownOptions', () => {
  const known = optionNames<{ waitMs?: number; ttlMs?: number }>({ waitMs: true, ttlMs: true })

  it('suggests the nearest known name for a typo, and lists the known ones for anything else', () => {
    expect(() => assertKnownOptions('f', { waitMs: 1 }, known)).not.toThrow()
    expect(() => assertKnownOptions('f', { watiMs: 1 }, known)).toThrow('f: "watiMs" is not an option; did you mean "waitMs"? (known: waitMs, ttlMs)')
    expect(() => assertKnownOptions('f', { TTLMS: 1 }, known)).toThrow('f: "TTLMS" is not an option; did you mean "ttlMs"?')
    expect(() => assertKnownOptions('f', { color: 1 }, known)).toThrow('f: "color" is not an option (known: waitMs, ttlMs)')
  })

  it('refuses options that are not an object, and sees inherited names as destructuring does', () => {
    for (const bad of [undefined, null, 5, 'waitMs']) {
      expect(() => assertKnownOptions('f', bad, known)).toThrow(InvalidOptionError)
      expect(() => assertKnownOptions('f', bad, known)).toThrow(/^f: the options must be an object \(waitMs, ttlMs\), got /)
    }
    const inherited = Object.create({ wait: 1 }) as object
    expect(() => assertKnownOptions('f', inherited, known)).toThrow('f: "wait" is not an option; did you mean "waitMs"?')
  })
})
