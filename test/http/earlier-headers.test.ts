// Headers set by middleware that runs before idem (CORS, HSTS) reach the client on
// every answer idem gives: replays and its own 400/409/422/503 problems, as they do
// on the route's first answer (on Koa, also those set once idem has returned). Before,
// Express dropped them from replays and problems, so a browser could not read a
// cross-origin replay.
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import { cors } from 'hono/cors'
import { secureHeaders } from 'hono/secure-headers'
import Koa from 'koa'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { idempotency as expressIdempotency } from '../../src/http/adapters/express/index.js'
import { idempotency as fastifyIdempotency } from '../../src/http/adapters/fastify/index.js'
import { idempotency as honoIdempotency, type IdemVariables } from '../../src/http/adapters/hono/index.js'
import { idempotency as koaIdempotency } from '../../src/http/adapters/koa/index.js'
import type { IdempotencyOptions } from '../../src/http/options.js'
import { latch, type Latch } from './support/app.js'
import { postgresBackend } from './support/backends.js'
import { httpCall, type Call } from './support/frontends.js'

const backend = await postgresBackend('idem_http_earlier_headers')
const ORIGIN = 'https://app.example'
const HSTS = 'max-age=63072000; includeSubDomains'

interface App {
  send(call: Call): Promise<Response>
  /** Opens the gate `/slow` waits at. */
  release(): void
  /** Resolves once a `/slow` request is in the route, holding its key. */
  entered: Promise<void>
  close(): Promise<void>
}

type Start = (options: Partial<IdempotencyOptions<unknown>>) => Promise<App>

function routeBody(path: string): { status: number; body: string } {
  return { status: path === '/gone' ? 404 : 201, body: JSON.stringify({ path, at: Math.random() }) }
}

const startExpress: Start = async (options) => {
  const gate = latch()
  const inside = latch()
  const app = express()
  app.use((_req, res, next) => {
    res.setHeader('access-control-allow-origin', ORIGIN)
    res.setHeader('strict-transport-security', HSTS)
    next()
  })
  app.use(expressIdempotency({ store: backend!.store, scope: () => 't', ...options }))
  app.post('/*path', async (req, res) => {
    if (req.path === '/slow') {
      inside.open()
      await gate.promise
    }
    const { status, body } = routeBody(req.path)
    res.status(status).type('application/json').send(body)
  })
  return onNode(http.createServer(app), gate, inside)
}

/** A Node server listening on loopback, as the test drives it. */
async function onNode(server: http.Server, gate: Latch, inside: Latch): Promise<App> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    send: (call) => httpCall(port, call),
    release: gate.open,
    entered: inside.promise,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  }
}

const startFastify: Start = async (options) => {
  const gate = latch()
  const inside = latch()
  const app = Fastify()
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('access-control-allow-origin', ORIGIN)
    reply.header('strict-transport-security', HSTS)
  })
  await app.register(fastifyIdempotency({ store: backend!.store, scope: () => 't', ...options }))
  app.post('/*', async (request, reply) => {
    const path = request.url.split('?')[0]!
    if (path === '/slow') {
      inside.open()
      await gate.promise
    }
    const { status, body } = routeBody(path)
    return reply.code(status).type('application/json').send(body)
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  return { send: (call) => httpCall(port, call), release: gate.open, entered: inside.promise, close: () => app.close() }
}

const startHono: Start = async (options) => {
  const gate = latch()
  const inside = latch()
  const app = new Hono<{ Variables: IdemVariables<unknown> }>()
  app.use(cors({ origin: ORIGIN }))
  app.use(secureHeaders({ strictTransportSecurity: HSTS }))
  app.use(honoIdempotency({ store: backend!.store, scope: () => 't', ...options }))
  app.post('/*', async (c) => {
    if (c.req.path === '/slow') {
      inside.open()
      await gate.promise
    }
    const { status, body } = routeBody(c.req.path)
    return c.body(body, status as 201, { 'content-type': 'application/json' })
  })
  return {
    async send(call) {
      const headers = new Headers({ origin: ORIGIN })
      for (const key of [call.key ?? []].flat()) headers.append('idempotency-key', key)
      if (call.contentType !== undefined) headers.set('content-type', call.contentType)
      return app.request(`http://localhost${call.path}`, { method: call.method ?? 'POST', headers, body: call.body ?? null })
    },
    release: gate.open,
    entered: inside.promise,
    close: async () => {},
  }
}

// Koa's middleware around idem sets its headers before the route, or once it has
// returned (as x-response-time does): idem's answers go out through Koa, after both.
const startKoa: Start = async (options) => {
  const gate = latch()
  const inside = latch()
  const app = new Koa()
  app.use(async (ctx, next) => {
    ctx.set('access-control-allow-origin', ORIGIN)
    await next()
    ctx.set('strict-transport-security', HSTS)
  })
  app.use(koaIdempotency({ store: backend!.store, scope: () => 't', ...options }))
  app.use(async (ctx) => {
    if (ctx.path === '/slow') {
      inside.open()
      await gate.promise
    }
    const { status, body } = routeBody(ctx.path)
    ctx.status = status
    ctx.type = 'application/json'
    ctx.body = body
  })
  return onNode(http.createServer(app.callback()), gate, inside)
}

const frameworks: Array<[string, Start]> = [
  ['express', startExpress],
  ['koa', startKoa],
  ['fastify', startFastify],
  ['hono', startHono],
]

/** How an answer's end is marked on a keep-alive connection: its length, or chunked; "none" is a bug. */
function framing(response: Response): string {
  return response.headers.get('content-length') ?? (response.headers.get('transfer-encoding') === 'chunked' ? 'chunked' : 'none')
}

function expectEarlierHeaders(response: Response, what: string): void {
  expect(response.headers.get('access-control-allow-origin'), what).toBe(ORIGIN)
  expect(response.headers.get('strict-transport-security'), what).toBe(HSTS)
}

describe.skipIf(backend === undefined)('headers set before idem (Postgres)', () => {
  afterAll(() => backend?.close())

  for (const [name, start] of frameworks) {
    it(`${name}: kept on the first answer, replays, and every problem idem answers`, async () => {
      const app = await start({})
      const down = await start(backend!.protection('down'))
      try {
        const key = `k-${name}-${Date.now()}`
        const first = await app.send({ path: '/orders', key, contentType: 'application/json', body: '{"a":1}' })
        expect(first.status).toBe(201)
        expectEarlierHeaders(first, 'first answer')
        const replay = await app.send({ path: '/orders', key, contentType: 'application/json', body: '{"a":1}' })
        expect([replay.status, replay.headers.get('idempotent-replayed'), await replay.text()]).toEqual([201, 'true', await first.text()])
        expectEarlierHeaders(replay, 'replay')
        expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'))
        // Framed, so a keep-alive client knows where the replay ends (Hono's in-process answers carry no length).
        if (name !== 'hono') expect(['chunked', first.headers.get('content-length')]).toContain(framing(replay))

        const missing = await app.send({ path: '/orders', contentType: 'application/json', body: '{}' })
        expect(missing.status).toBe(400)
        expectEarlierHeaders(missing, '400 missing key')
        const invalid = await app.send({ path: '/orders', key: ['"a"', '"b"'], contentType: 'application/json', body: '{}' })
        expect(invalid.status).toBe(400)
        expectEarlierHeaders(invalid, '400 invalid key')
        const mismatch = await app.send({ path: '/orders', key, contentType: 'application/json', body: '{"a":2}' })
        expect(mismatch.status).toBe(422)
        expectEarlierHeaders(mismatch, '422')
        expect(mismatch.headers.get('content-type')).toBe('application/problem+json')
        if (name !== 'hono') expect(framing(mismatch)).toMatch(new RegExp(`^(chunked|${(await mismatch.clone().arrayBuffer()).byteLength})$`))

        const slowCall: Call = { path: '/slow', key: `${key}-slow`, contentType: 'application/json', body: '{}' }
        const slow = app.send(slowCall)
        // Only once the first request holds the key: sent earlier, the duplicate could
        // claim it first and wait at the gate itself.
        await app.entered
        const busy = await app.send(slowCall)
        expect(busy.status).toBe(409)
        expectEarlierHeaders(busy, '409')
        expect(busy.headers.get('retry-after')).toBe('1')
        app.release()
        expect((await slow).status).toBe(201)

        const unavailable = await down.send({ path: '/orders', key, contentType: 'application/json', body: '{}' })
        expect(unavailable.status).toBe(503)
        expectEarlierHeaders(unavailable, '503')
        expect(unavailable.headers.get('retry-after')).toBe('1')
      } finally {
        await app.close()
        await down.close()
      }
    })
  }
})
