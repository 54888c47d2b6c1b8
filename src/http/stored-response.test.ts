import { describe, expect, it } from 'vitest'
import { bodyBytes, largestStoredBody, replayResponse, STORED_HEADERS_ROOM, storeResponse, streamlessResponse, type StoredResponse } from './stored-response.js'

describe('streamless responses (the Express adapter writes its answers with bodyBytes)', () => {
  const stored: StoredResponse = {
    status: 201,
    headers: [
      ['content-type', 'application/json'],
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
    ],
    bodyBase64: Buffer.from('{"id":7}').toString('base64'),
  }

  it('carries status, headers and every body byte for bodyBytes, and no body stream', async () => {
    const response = replayResponse(stored, true)
    expect(response.body).toBeNull()
    expect(response.status).toBe(201)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
    expect(response.headers.get('idempotent-replayed')).toBe('true')
    expect(Buffer.from(await bodyBytes(response)).toString()).toBe('{"id":7}')
  })

  it('is the same answer as the streamed replay', async () => {
    const streamed = replayResponse(stored)
    const streamless = replayResponse(stored, true)
    expect([...streamless.headers]).toEqual([...streamed.headers])
    expect(Buffer.from(await bodyBytes(streamless))).toEqual(Buffer.from(await streamed.arrayBuffer()))
  })

  it('drops a body sent with a no-body status, as the streamed form does', async () => {
    const response = streamlessResponse(204, '', new Headers(), new Uint8Array([1, 2]))
    expect((await bodyBytes(response)).byteLength).toBe(0)
    expect([...(await bodyBytes(streamlessResponse(200, 'OK', new Headers(), new Uint8Array([0, 255]))))]).toEqual([0, 255])
  })
})

describe('a body over maxStoredBodyBytes', () => {
  const allowed = new Set(['content-type', 'location', 'etag'])
  const response = new Response(null, { status: 201, headers: { 'content-type': 'application/json', location: '/orders/1', etag: '"v1"', 'x-debug': '1' } })
  const body = new TextEncoder().encode('{"id":1}')

  it('is stored with its status and allow-listed headers, without the body or the headers describing it, and its size', () => {
    const upTo = (maxBodyBytes: number) => ({ maxBodyBytes, maxOutcomeBytes: Infinity })
    expect(storeResponse(response, body, allowed, upTo(7))).toEqual({
      status: 201,
      headers: [
        ['etag', '"v1"'],
        ['location', '/orders/1'],
      ],
      bodyBase64: '',
      omittedBodyBytes: 8,
    })
    expect(storeResponse(response, body, allowed, upTo(8)).omittedBodyBytes).toBeUndefined()
  })

  it('replays with an empty body and Idempotent-Body-Omitted, streamed or not', async () => {
    const stored = storeResponse(response, body, allowed, { maxBodyBytes: 0, maxOutcomeBytes: Infinity })
    for (const replay of [replayResponse(stored), replayResponse(stored, true)]) {
      expect(replay.status).toBe(201)
      expect(replay.headers.get('idempotent-body-omitted')).toBe('true')
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(replay.headers.get('location')).toBe('/orders/1')
      expect((await bodyBytes(replay)).byteLength).toBe(0)
    }
    // A record written before the option existed has no marker: replayed whole, unmarked.
    const older = replayResponse({ status: 200, headers: [], bodyBase64: Buffer.from('ok').toString('base64') })
    expect(older.headers.get('idempotent-body-omitted')).toBeNull()
  })
})

describe('what the store holds bounds the stored form (maxOutcomeBytes)', () => {
  const size = (stored: StoredResponse): number => Buffer.byteLength(JSON.stringify(stored), 'utf8')
  const bodyOf = (bytes: number): Uint8Array => new Uint8Array(bytes).fill(0xff)

  it('a body of largestStoredBody bytes, with headers of STORED_HEADERS_ROOM, is stored whole within the limit; one byte more is not', () => {
    for (const maxOutcomeBytes of [1024 * 1024, 3_932_160, 16 * 1024 * 1024 + 1, 16 * 1024 * 1024 + 2]) {
      const largest = largestStoredBody(maxOutcomeBytes)
      const limits = { maxBodyBytes: largest, maxOutcomeBytes }
      // Headers whose JSON takes the whole room: escaped quotes and Latin-1 take two bytes of it each.
      const value = 'é"'.repeat(Math.floor((STORED_HEADERS_ROOM - 64) / 4))
      const headers = new Headers({ 'content-type': 'application/octet-stream', link: value })
      expect(Buffer.byteLength(JSON.stringify([...headers]), 'utf8')).toBeLessThanOrEqual(STORED_HEADERS_ROOM)
      const allowed = new Set(['content-type', 'link'])
      const whole = storeResponse(new Response(null, { status: 200, headers }), bodyOf(largest), allowed, limits)
      expect(whole.omittedBodyBytes).toBeUndefined()
      expect(size(whole)).toBeLessThanOrEqual(maxOutcomeBytes)
      expect(storeResponse(new Response(null, { status: 200, headers }), bodyOf(largest + 1), allowed, limits).omittedBodyBytes).toBe(largest + 1)
    }
  })

  it('a body that would fit maxStoredBodyBytes but not beside large headers is stored without it, and the stored form fits', () => {
    const maxOutcomeBytes = 64 * 1024
    const limits = { maxBodyBytes: largestStoredBody(maxOutcomeBytes), maxOutcomeBytes }
    const headers = new Headers({ 'content-type': 'text/plain', link: '\u0001'.repeat(5_000) })
    const allowed = new Set(['content-type', 'link'])
    const stored = storeResponse(new Response(null, { status: 201, headers }), bodyOf(limits.maxBodyBytes), allowed, limits)
    expect(stored.omittedBodyBytes).toBe(limits.maxBodyBytes)
    expect(stored.headers.map(([name]) => name)).toEqual(['link'])
    expect(size(stored)).toBeLessThanOrEqual(maxOutcomeBytes)
    // With a small body the same headers leave room: stored whole.
    expect(storeResponse(new Response(null, { status: 201, headers }), bodyOf(100), allowed, limits).omittedBodyBytes).toBeUndefined()
  })

  it('leaves nothing for bodies when the store holds less than the frame and the header room', () => {
    expect(largestStoredBody(STORED_HEADERS_ROOM)).toBe(0)
  })
})

describe('reading a stored response back', () => {
  it('replays a body of 12 MiB (whose base64 a repeated-group regex could not check), and refuses base64 that is not in groups of four', async () => {
    const body = new Uint8Array(12 * 1024 * 1024).fill(7)
    const stored = storeResponse(new Response(null, { status: 200 }), body, new Set())
    expect((await bodyBytes(replayResponse(stored, true))).byteLength).toBe(body.byteLength)
    expect(() => replayResponse({ ...stored, bodyBase64: 'AAAAA' })).toThrow(/not base64/)
    expect(() => replayResponse({ ...stored, bodyBase64: 'AAA' })).toThrow(/not base64/)
    expect(() => replayResponse({ ...stored, bodyBase64: 'A===' })).toThrow(/not base64/)
  })
})
