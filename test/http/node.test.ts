import express from 'express'
import fc from 'fast-check'
import http, { type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { idempotency } from '../../src/http/express.js'
import { jsonText, webRequest } from '../../src/http/node.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { httpCall } from './support/frontends.js'

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

describe('Express with express.json() mounted before the middleware', () => {
  it('fingerprints a parsed body nested past the stack instead of answering 500, and replays it', async () => {
    let runs = 0
    const app = express()
    app.use(express.json({ limit: '1mb' }))
    app.use(idempotency({ store: memoryStore(), scope: () => 'acct' }))
    app.post('/json', (_req, res) => void res.status(201).json({ run: ++runs }))
    const server = http.createServer(app)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const call = { path: '/json', key: '"deep"', contentType: 'application/json', body: `${'['.repeat(30_000)}${']'.repeat(30_000)}` }
      expect((await httpCall(port, call)).status).toBe(201)
      const replay = await httpCall(port, call)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(runs).toBe(1)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})
