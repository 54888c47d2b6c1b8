import { describe, expect, it } from 'vitest'
import { bodyBytes, replayResponse, streamlessResponse, type StoredResponse } from './stored-response.js'

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
