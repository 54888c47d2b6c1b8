// Responses stored in the format before the current one (format 1: `[name, value]`
// pairs and a base64 body) still replay byte for byte: rows written so, through a real
// store, are answered by every front end with their status, headers and body bytes, and
// the route does not run. Format 2 (a flat header list, a UTF-8 body as text) is what is
// written now; its own round trip is checked on the same stores.
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/core/engine.js'
import { fingerprintRequest } from '../../src/http/request-fingerprint.js'
import type { KeyStore } from '../../src/ports/key-store.js'
import { idempotency as expressIdempotency } from '../../src/http/adapters/express/index.js'
import { idempotency as fastifyIdempotency } from '../../src/http/adapters/fastify/index.js'
import { idempotency as fetchIdempotency } from '../../src/http/fetch/index.js'
import { idempotency as honoIdempotency } from '../../src/http/adapters/hono/index.js'
import { postgresBackend, sqliteBackend } from './support/backends.js'
import { httpCall, type Call } from './support/frontends.js'

const backends = [await postgresBackend('idem_http_stored_format'), sqliteBackend('idem-http-stored-format')]
afterAll(() => Promise.all(backends.map((backend) => backend?.close())))

const REQUEST_BODY = '{"amount":5}'
const options = { scope: () => 'acct', replayHeaders: ['content-type', 'location', 'set-cookie'] }

interface App {
  send(call: Call): Promise<Response>
  /** How many times a route ran. */
  runs(): number
  close(): Promise<void>
}

type Start = (store: KeyStore<unknown>) => Promise<App>

const startExpress: Start = async (store) => {
  let runs = 0
  const app = express()
  app.use(expressIdempotency({ store, ...options }))
  app.post('/orders', (_req, res) => void res.status(201).json({ run: ++runs }))
  const server = http.createServer(app)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { send: (call) => httpCall(port, call), runs: () => runs, close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) }
}

const startFastify: Start = async (store) => {
  let runs = 0
  const app = Fastify()
  await app.register(fastifyIdempotency({ store, ...options }))
  app.post('/orders', async (_request, reply) => reply.code(201).send({ run: ++runs }))
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  return { send: (call) => httpCall(port, call), runs: () => runs, close: () => app.close() }
}

const webRequest = (call: Call): Request =>
  new Request(`http://localhost${call.path}`, { method: 'POST', headers: { 'idempotency-key': String(call.key), 'content-type': call.contentType! }, body: call.body as string })

const startHono: Start = async (store) => {
  let runs = 0
  const app = new Hono()
  app.use(honoIdempotency({ store, ...options }))
  app.post('/orders', (c) => c.json({ run: ++runs }, 201))
  return { send: async (call) => app.request(webRequest(call)), runs: () => runs, close: async () => {} }
}

const startFetch: Start = async (store) => {
  let runs = 0
  const protect = fetchIdempotency({ store, ...options })
  return {
    send: (call) => protect(webRequest(call), async () => Response.json({ run: ++runs }, { status: 201 })),
    runs: () => runs,
    close: async () => {},
  }
}

const frontEnds: Array<[string, Start]> = [
  ['express', startExpress],
  ['fastify', startFastify],
  ['hono', startHono],
  ['fetch', startFetch],
]

// Bodies a format-1 row holds: UTF-8 text, and bytes that are not UTF-8 at all.
const BODIES: Array<[string, Buffer]> = [
  ['text', Buffer.from('{"id":7,"name":"ünïcødé ✓"}', 'utf8')],
  ['bytes', Buffer.from([0x00, 0xff, 0xc3, 0x28, 0x80, 0x0a, 0xef, 0xbb, 0xbf])],
]

const call = (key: string): Call => ({ path: '/orders', key, contentType: 'application/json', body: REQUEST_BODY })

/** Writes `outcome` as the stored response of `key`, as the middleware of that time did. */
async function storeRow(store: KeyStore<unknown>, key: string, outcome: unknown): Promise<void> {
  const fingerprint = fingerprintRequest({ method: 'POST', route: '/orders', body: REQUEST_BODY, contentType: 'application/json' })
  await createIdem({ store }).run({ scope: 'acct', key, fingerprint }, () => outcome)
}

for (const backend of backends) {
  describe.skipIf(backend === undefined)(`stored responses on ${backend?.name}`, () => {
    for (const [name, start] of frontEnds) {
      it(`${name}: a format-1 row replays its status, headers and body byte for byte, without running the route`, async () => {
        const app = await start(backend!.store as KeyStore<unknown>)
        try {
          for (const [kind, body] of BODIES) {
            const key = `v1-${name}-${kind}-${Date.now()}`
            await storeRow(backend!.store as KeyStore<unknown>, key, {
              status: 201,
              headers: [
                ['content-type', 'application/octet-stream'],
                ['location', '/orders/7'],
                ['set-cookie', 'a=1'],
                ['set-cookie', 'b=2'],
              ],
              bodyBase64: body.toString('base64'),
            })
            const replay = await app.send(call(key))
            expect(replay.status).toBe(201)
            expect(replay.headers.get('idempotent-replayed')).toBe('true')
            expect(replay.headers.get('content-type')).toBe('application/octet-stream')
            expect(replay.headers.get('location')).toBe('/orders/7')
            expect(replay.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
            expect(Buffer.from(await replay.arrayBuffer()).equals(body), kind).toBe(true)
          }
          // A row whose body was left out: status and headers, an empty body, marked omitted.
          const key = `v1-${name}-omitted-${Date.now()}`
          await storeRow(backend!.store as KeyStore<unknown>, key, { status: 201, headers: [['location', '/orders/8']], bodyBase64: '', omittedBodyBytes: 2_000_000 })
          const omitted = await app.send(call(key))
          expect([omitted.status, omitted.headers.get('location'), omitted.headers.get('idempotent-body-omitted')]).toEqual([201, '/orders/8', 'true'])
          expect((await omitted.arrayBuffer()).byteLength).toBe(0)
          expect(app.runs()).toBe(0)
        } finally {
          await app.close()
        }
      })

      it(`${name}: what it stores now (format 2) replays the first answer's bytes`, async () => {
        const app = await start(backend!.store as KeyStore<unknown>)
        try {
          const key = `v2-${name}-${Date.now()}`
          const first = await app.send(call(key))
          const firstBody = Buffer.from(await first.arrayBuffer())
          const replay = await app.send(call(key))
          expect([replay.status, replay.headers.get('idempotent-replayed'), replay.headers.get('content-type')]).toEqual([201, 'true', first.headers.get('content-type')])
          expect(Buffer.from(await replay.arrayBuffer()).equals(firstBody)).toBe(true)
          expect(app.runs()).toBe(1)
          // The row itself: the JSON body kept as text.
          const fingerprint = fingerprintRequest({ method: 'POST', route: '/orders', body: REQUEST_BODY, contentType: 'application/json' })
          const row = await createIdem({ store: backend!.store as KeyStore<unknown> }).run({ scope: 'acct', key, fingerprint }, () => 'not run')
          expect(row).toMatchObject({ replayed: true, value: { v: 2, status: 201, text: firstBody.toString('utf8') } })
        } finally {
          await app.close()
        }
      })
    }
  })
}
