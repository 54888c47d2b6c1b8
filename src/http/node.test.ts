import fc from 'fast-check'
import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { jsonText, webRequest } from './node.js'
const nodeRequest = (host: string | undefined, extra: string[] = []): IncomingMessage =>
  ({
    method: 'POST',
    headers: host === undefined ? {} : { host },
    rawHeaders: [...(host === undefined ? [] : ['Host', host]), ...extra],
  }) as unknown as IncomingMessage

describe('webRequest (the Express and Fastify adapters)', () => {
  it('keeps a plain Host and the path and query as the framework saw them', () => {
    expect(webRequest(nodeRequest('api.example.com:8080'), '/orders?dry_run=1', null).url).toBe('http://api.example.com:8080/orders?dry_run=1')
    expect(webRequest(nodeRequest('[::1]:3000'), 'orders', null).url).toBe('http://[::1]:3000/orders')
  })

  it('puts the path on localhost when the Host is missing, is not a bare authority, or does not parse', () => {
    // "a?" and "a/b" would move the real path into the query or another path.
    for (const host of [undefined, 'a?', 'a/b', 'a#', 'user@a', 'a:99999', 'a:']) {
      expect(webRequest(nodeRequest(host), '/orders', null).url).toBe('http://localhost/orders')
    }
  })

  it('copies repeated fields one by one, so two keys arrive as a list', () => {
    const request = webRequest(nodeRequest('h', ['Idempotency-Key', '"a"', 'Idempotency-Key', '"b"']), '/', 'body')
    expect(request.headers.get('idempotency-key')).toBe('"a", "b"')
  })
})

describe('jsonText (a parsed body, for the fingerprint)', () => {
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
  })
})

