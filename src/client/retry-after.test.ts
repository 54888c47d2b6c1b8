import { describe, expect, it } from 'vitest'
import { createClient, parseRetryAfter, ProblemError, type RetryEvent } from './index.js'
import { scriptedFetch } from '../../test/client/fake-fetch.js'

const now = Date.parse('2026-11-30T12:00:00Z')

describe('parseRetryAfter', () => {
  it.each([
    ['0', 0],
    ['3', 3_000],
    [' 120 ', 120_000],
    ['Mon, 30 Nov 2026 12:00:02 GMT', 2_000], // IMF-fixdate
    ['Monday, 30-Nov-26 12:00:05 GMT', 5_000], // obsolete RFC 850
    ['Mon Nov 30 12:01:00 2026', 60_000], // asctime
    ['Sun, 29 Nov 2026 12:00:00 GMT', 0], // in the past: retry now
  ])('reads %j as %i ms', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms)
  })

  it.each([null, undefined, '', '1.5', '-1', '2026-11-30', 'soon', '3 seconds', 'Mon, 30 Nov 2026 12:00:02 UTC'])(
    'ignores %j (the client falls back to backoff)',
    (value) => {
      expect(parseRetryAfter(value, now)).toBeUndefined()
    },
  )
})

describe('the client honours Retry-After', () => {
  it.each([409, 429, 503])('waits what a %i asks for instead of its own backoff', async (status) => {
    // The 409 is idem's in-flight answer: the only 409 the client retries.
    const { fetch, sent } = scriptedFetch([{ status, headers: { 'retry-after': '0' }, body: JSON.stringify({ status, code: 'in-flight' }) }, 201])
    const retries: RetryEvent[] = []
    // random → 1 with a large base: without Retry-After the wait would be 5 s.
    const client = createClient({ fetch, backoff: { baseMs: 5_000, maxMs: 5_000 }, random: () => 1, onRetry: (e) => retries.push(e) })
    const result = await client.fetch('http://api.test/x', { method: 'POST', body: 'a' })
    expect(result.attempts).toBe(2)
    expect(sent).toHaveLength(2)
    expect(retries).toMatchObject([{ status, delayMs: 0, retryAfter: true }])
  })

  it.each([
    ['delta-seconds', '3600'],
    ['an HTTP-date', new Date(Date.now() + 3_600_000).toUTCString()],
  ])('gives up at once when Retry-After (%s) is past the deadline, with the last answer', async (_, retryAfter) => {
    const { fetch, sent } = scriptedFetch([{ status: 503, headers: { 'retry-after': retryAfter } }, 201])
    let retried = 0
    const client = createClient({ fetch, deadlineMs: 5_000, onRetry: () => retried++ })
    const error = await client.fetch('http://api.test/x', { method: 'POST', body: 'a' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ProblemError)
    expect(error).toMatchObject({ status: 503, retryable: true, attempts: 1 })
    expect(sent).toHaveLength(1)
    expect(retried).toBe(0)
  })
})
