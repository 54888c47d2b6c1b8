import { getRequestListener } from '@hono/node-server'
import { describe, expect, it } from 'vitest'
import { lightweightBody, webReply } from './index.js'

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
    expect(lightweightBody(text)).toBe('{"é":1}')
    expect(text.bodyUsed).toBe(false)
    expect(await text.text()).toBe('{"é":1}')

    const bytes = new LightResponse(new Uint8Array([0, 255]), { status: 200 })
    expect([...lightweightBody(bytes)!]).toEqual([0, 255])
    expect(lightweightBody(new LightResponse(null, { status: 204 }))).toBe('')
  })

  it('leaves streamed bodies and other responses to the standard reader', async () => {
    const stream = new LightResponse(new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array([1])), c.close()) }))
    expect(lightweightBody(stream)).toBeUndefined()
    expect([...((await webReply(stream)).body as Uint8Array)]).toEqual([1])
    expect(lightweightBody(new NodeResponse('x'))).toBeUndefined()
    const read = await webReply(new NodeResponse('x'))
    expect(Buffer.from(read.body).toString()).toBe('x')
    expect(await read.response.text()).toBe('x')
  })

  it('gives webReply the body, and the same response is sent', async () => {
    const response = new LightResponse('hello', { status: 200 })
    const reply = await webReply(response)
    expect(reply.body).toBe('hello')
    expect(reply.response).toBe(response)
    expect(await response.text()).toBe('hello')
  })
})
