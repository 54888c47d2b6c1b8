import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { backoffDelay } from './backoff.js'
import { InvalidOptionError } from './errors/invalid-option.js'

describe('backoffDelay (full jitter)', () => {
  const bounds = { baseMs: 100, maxMs: 1_000 }
  const drawing = (random: number) => backoffDelay(bounds, 'test', { random: () => random })

  it('picks below a ceiling that doubles per attempt and stops at maxMs', () => {
    // random → 1 reaches the ceiling: 100, 200, 400, 800, then capped at 1000.
    expect([1, 2, 3, 4, 5, 6].map(drawing(1))).toEqual([100, 200, 400, 800, 1000, 1000])
    expect([1, 2, 3, 4, 5, 6].map(drawing(0))).toEqual([0, 0, 0, 0, 0, 0])
    expect(drawing(0.25)(3)).toBe(100)
  })

  it('stays a whole number within [0, min(max, base·2^(n−1))] for any attempt, bounds and random', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, baseMs, extra, random) => {
          const maxMs = baseMs + extra
          const delay = backoffDelay({ baseMs, maxMs }, 'test', { random: () => random })(attempt)
          const ceiling = baseMs === 0 ? 0 : Math.min(maxMs, baseMs * 2 ** (attempt - 1))
          expect(Number.isInteger(delay)).toBe(true)
          expect(delay).toBeGreaterThanOrEqual(0)
          expect(delay).toBeLessThanOrEqual(ceiling)
        },
      ),
    )
  })

  it('clamps a misbehaving injected random into the bounds', () => {
    expect(drawing(7)(1)).toBe(100)
    expect(drawing(-3)(1)).toBe(0)
    expect(drawing(Number.NaN)(1)).toBe(0)
  })

  it('has no NaN with a zero base at a huge attempt number', () => {
    expect(backoffDelay({ baseMs: 0, maxMs: 0 }, 'test', { random: () => 0.5 })(5_000)).toBe(0)
  })

  it("fills in the caller's defaults, one bound at a time", () => {
    const defaults = { baseMs: 10, maxMs: 50 }
    expect([1, 2, 3, 4].map(backoffDelay(undefined, 'test', { defaults, random: () => 1 }))).toEqual([10, 20, 40, 50])
    expect([1, 2].map(backoffDelay({ maxMs: 15 }, 'test', { defaults, random: () => 1 }))).toEqual([10, 15])
  })

  it('takes a function of the attempt, rounded to whole milliseconds and checked', () => {
    expect(backoffDelay((attempt) => attempt * 1.4, 'test')(2)).toBe(3)
    expect(() => backoffDelay(() => -1, 'myWorker')(1)).toThrow(/myWorker: option "backoff" returned -1 for attempt 1/)
  })

  it('names the malformed option', () => {
    expect(() => backoffDelay({ baseMs: 10, maxMs: 5 }, 'createDispatcher')).toThrow(/createDispatcher: option "backoff.maxMs"/)
    expect(() => backoffDelay({ baseMs: 1.5 }, 'startConsumer', { option: 'retry' })).toThrow(/startConsumer: option "retry.baseMs"/)
    expect(() => backoffDelay(5 as never, 'createClient')).toThrow(InvalidOptionError)
  })
})
