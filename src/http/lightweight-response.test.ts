import { getRequestListener } from '@hono/node-server'
import { describe, expect, it } from 'vitest'
import { lightweightBody } from './lightweight-response.js'
import { bodyBytes } from './stored-response.js'

// @hono/node-server swaps the global Response for its lightweight one when a listener is
// made. The middleware reads such responses' bodies without building them: if a new
// version of the server changes its internals, these tests say so (the middleware would
// still be correct, only slower, through the standard reader).
const NodeResponse = globalThis.Response
getRequestListener(() => new Response(null))
const LightResponse = globalThis.Response

describe('lightweightBody', () => {
  it('is really looking at the lightweight class', () => {
    expect(LightResponse).not.toBe(NodeResponse)
  })

  it('reads text and byte bodies without consuming the response', async () => {
    const text = new LightResponse('{"é":1}', { status: 201, headers: { 'content-type': 'application/json' } })
    expect(Buffer.from(lightweightBody(text)!).toString('utf8')).toBe('{"é":1}')
    expect(text.bodyUsed).toBe(false)
    expect(await text.text()).toBe('{"é":1}')

    const bytes = new LightResponse(new Uint8Array([0, 255]), { status: 200 })
    expect([...lightweightBody(bytes)!]).toEqual([0, 255])
    expect(lightweightBody(new LightResponse(null, { status: 204 }))!.byteLength).toBe(0)
  })

  it('leaves streamed bodies and other responses to the standard reader', async () => {
    const stream = new LightResponse(new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array([1])), c.close()) }))
    expect(lightweightBody(stream)).toBeUndefined()
    expect([...(await bodyBytes(stream))]).toEqual([1])
    expect(lightweightBody(new NodeResponse('x'))).toBeUndefined()
    expect(Buffer.from(await bodyBytes(new NodeResponse('x'))).toString()).toBe('x')
  })

  it('gives bodyBytes the bytes, and the response can still be sent', async () => {
    const response = new LightResponse('hello', { status: 200 })
    expect(Buffer.from(await bodyBytes(response)).toString()).toBe('hello')
    expect(await response.text()).toBe('hello')
  })
})
