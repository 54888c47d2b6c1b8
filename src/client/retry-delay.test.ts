import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { retryDelay, createClient, type RetryEvent } from './index.js'
import { scriptedFetch } from '../../test/client/fake-fetch.js'

describe('retryDelay (full jitter)', () => {
  const bounds = { baseDelayMs: 100, maxDelayMs: 1_000 }

  it('picks uniformly below a ceiling that doubles per attempt and stops at maxDelayMs', () => {
    // random → 1 reaches the ceiling: 100, 200, 400, 800, then capped at 1000.
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelay(n, bounds, 1))).toEqual([100, 200, 400, 800, 1000, 1000])
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelay(n, bounds, 0))).toEqual([0, 0, 0, 0, 0, 0])
    expect(retryDelay(3, bounds, 0.25)).toBe(100)
  })

  it('stays within [0, min(max, base·2^(n−1))] for any attempt, bounds and random', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.double({ min: 0, max: 10_000, noNaN: true }),
        fc.double({ min: 0, max: 1e7, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, baseDelayMs, extra, random) => {
          const maxDelayMs = baseDelayMs + extra
          const delay = retryDelay(attempt, { baseDelayMs, maxDelayMs }, random)
          const ceiling = baseDelayMs === 0 ? 0 : Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1))
          expect(Number.isFinite(delay)).toBe(true)
          expect(delay).toBeGreaterThanOrEqual(0)
          expect(delay).toBeLessThanOrEqual(ceiling)
        },
      ),
    )
  })

  it('clamps a misbehaving injected random into the bounds', () => {
    expect(retryDelay(1, bounds, 7)).toBe(100)
    expect(retryDelay(1, bounds, -3)).toBe(0)
    expect(retryDelay(1, bounds, Number.NaN)).toBe(0)
  })

  it('has no NaN with a zero base at a huge attempt number', () => {
    expect(retryDelay(5_000, { baseDelayMs: 0, maxDelayMs: 0 }, 0.5)).toBe(0)
  })
})

describe('the client waits what backoff says', () => {
  it('uses the injected random for every wait, attempt by attempt', async () => {
    const { fetch } = scriptedFetch([503, 503, 503, 503, 201])
    const draws = [0.5, 0.25, 1, 0.75]
    const retries: RetryEvent[] = []
    const client = createClient({
      fetch,
      baseDelayMs: 2,
      maxDelayMs: 6,
      random: () => draws.shift() ?? 0,
      onRetry: (event) => retries.push(event),
    })
    const { attempts, response } = await client.fetch('http://api.test/orders', { method: 'POST', body: '{}' })
    expect(response.status).toBe(201)
    expect(attempts).toBe(5)
    // ceilings 2, 4, 8→6, 16→6
    expect(retries.map((r) => r.delayMs)).toEqual([1, 1, 6, 4.5])
    expect(retries.map((r) => [r.attempt, r.reason, r.status, r.retryAfter])).toEqual([
      [1, 'status', 503, false],
      [2, 'status', 503, false],
      [3, 'status', 503, false],
      [4, 'status', 503, false],
    ])
  })
})
