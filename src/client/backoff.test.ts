import { describe, expect, it } from 'vitest'
import { createClient, type RetryEvent } from './index.js'
import { scriptedFetch } from '../../test/client/fake-fetch.js'

describe('the client waits what backoff says', () => {
  it('uses the injected random for every wait, attempt by attempt', async () => {
    const { fetch } = scriptedFetch([503, 503, 503, 503, 201])
    const draws = [0.5, 0.25, 1, 0.75]
    const retries: RetryEvent[] = []
    const client = createClient({
      fetch,
      backoff: { baseMs: 2, maxMs: 6 },
      random: () => draws.shift() ?? 0,
      onRetry: (event) => retries.push(event),
    })
    const { attempts, response } = await client.fetch('http://api.test/orders', { method: 'POST', body: '{}' })
    expect(response.status).toBe(201)
    expect(attempts).toBe(5)
    // ceilings 2, 4, 8→6, 16→6, in whole milliseconds
    expect(retries.map((r) => r.delayMs)).toEqual([1, 1, 6, 4])
    expect(retries.map((r) => [r.attempt, r.reason, r.status, r.retryAfter])).toEqual([
      [1, 'status', 503, false],
      [2, 'status', 503, false],
      [3, 'status', 503, false],
      [4, 'status', 503, false],
    ])
  })

  it('takes a function of the attempt for its waits', async () => {
    const { fetch } = scriptedFetch([503, 503, 201])
    const retries: RetryEvent[] = []
    const client = createClient({ fetch, backoff: (attempt) => attempt * 1.4, onRetry: (event) => retries.push(event) })
    await client.fetch('http://api.test/orders', { method: 'POST', body: '{}' })
    expect(retries.map((r) => r.delayMs)).toEqual([1, 3])
  })
})
