// Express with its JSON parser mounted before idem hands the middleware a parsed body,
// which is fingerprinted through jsonText (src/http/node.ts): nesting deeper than the
// stack must be a replayable request, not a 500.
import express from 'express'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { idempotency } from '../../src/http/adapters/express/index.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import { httpCall } from './support/frontends.js'

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
