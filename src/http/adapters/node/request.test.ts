import fc from 'fast-check'
import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { jsonText, nodeRequest, parsedBody } from './request.js'
const incoming = (headers: Record<string, string | string[]>, method = 'POST'): IncomingMessage => ({ method, headers }) as unknown as IncomingMessage

describe('nodeRequest (the Express, Fastify and NestJS adapters)', () => {
  it('reads the path and query as the framework saw them', () => {
    const request = nodeRequest(incoming({}), '/orders?dry_run=1#frag', null)
    expect([request.method, request.path, request.query]).toEqual(['POST', '/orders', 'dry_run=1'])
    expect(nodeRequest(incoming({}), 'orders', null).path).toBe('/orders')
    expect(nodeRequest(incoming({}), '/a#b?c', null).query).toBe('')
  })

  it("reads Node's header values: repeated fields arrive as a list", () => {
    // Node joins a repeated field it does not know with ", ".
    const request = nodeRequest(incoming({ 'idempotency-key': '"a", "b"', 'x-list': ['1', '2'] }), '/', 'body')
    expect(request.header('idempotency-key')).toBe('"a", "b"')
    expect(request.header('x-list')).toBe('1, 2')
    expect(request.header('absent')).toBeNull()
  })

  it('stands a given content type for the request\'s own', () => {
    expect(nodeRequest(incoming({ 'content-type': 'application/x-www-form-urlencoded' }), '/', '{}', 'application/json').header('content-type')).toBe('application/json')
  })

  it('refuses a body over the limit, declared or not', async () => {
    await expect(nodeRequest(incoming({ 'content-length': '10' }), '/', 'x').body(5)).rejects.toThrow(/larger than 5 bytes/)
    await expect(nodeRequest(incoming({}), '/', 'abcdef').body(5)).rejects.toThrow(/larger than 5 bytes/)
    expect(Buffer.from(await nodeRequest(incoming({}), '/', 'abc').body(5)).toString()).toBe('abc')
    expect((await nodeRequest(incoming({}, 'GET'), '/', 'abc').body(5)).byteLength).toBe(0)
  })
})

describe('parsedBody and jsonText (a parsed body, for the fingerprint)', () => {
  it('is JSON.stringify for whatever a body parser produces', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => jsonText(value) === JSON.stringify(value)),
      { numRuns: 300 },
    )
    const odd = { a: undefined, b: [undefined, () => 1], c: new Date(0), d: Buffer.from('hi'), e: -0 }
    expect(jsonText(odd)).toBe(JSON.stringify(odd))
  })

  it('serialises nesting deeper than JSON.stringify can', () => {
    const deep = JSON.parse(`${'['.repeat(60_000)}${']'.repeat(60_000)}`) as unknown
    expect(() => JSON.stringify(deep)).toThrow(RangeError)
    expect(jsonText(deep)).toBe(`${'['.repeat(60_000)}${']'.repeat(60_000)}`)
    expect(parsedBody(deep)).toBe(jsonText(deep))
    expect(parsedBody({ b: 1, a: [2] })).toBe('{"b":1,"a":[2]}')
  })
})

