import express from 'express'
import Fastify from 'fastify'
import Koa from 'koa'
import koa2 from 'koa2'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { cloneRawRequest } from 'hono/request'
import { randomUUID } from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { idempotency as expressIdempotency } from '../../src/http/adapters/express/index.js'
import { idempotency as fastifyIdempotency } from '../../src/http/adapters/fastify/index.js'
import { idempotency as honoIdempotency, type IdemVariables } from '../../src/http/adapters/hono/index.js'
import { idempotency as koaIdempotency, type IdemState } from '../../src/http/adapters/koa/index.js'
import type { IdempotencyContext } from '../../src/http/options.js'
import type { SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { createEventStream, type EventStream, type WarningEvent } from '../../src/core/events.js'
import { latch, type Latch } from './support/app.js'
import { sqliteBackend } from './support/backends.js'
import { httpCall } from './support/frontends.js'
import { patience } from '../support/patience.js'

// What is particular to each adapter's wiring, beyond the shared conformance table:
// body parsers before and after the middleware, validation, and clients that leave.

const backend = sqliteBackend('idem-http-adapters')
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls a condition that settles after a response was sent (a commit); gives up after a hang guard (2 s, scaled by the machine's load). */
async function eventually(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + patience(2_000)
  while (Date.now() < deadline && !(await condition())) await sleep(5)
  expect(await condition()).toBe(true)
}
afterAll(() => backend.close())
const scope = (): string => 'acct'
const key = (): string => `"k-${randomUUID()}"`
const json = 'application/json'

interface Listening {
  port: number
  close(): Promise<void>
}

async function listen(server: http.Server): Promise<Listening> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

describe('express', () => {
  it('mounted before express.json(), the route gets the parsed body', async () => {
    const app = express()
    app.use(expressIdempotency({ store: backend.store, scope }))
    app.use(express.json())
    app.post('/orders', (req, res) => {
      res.status(201).json({ got: req.body, held: req.idem !== undefined })
    })
    const server = await listen(http.createServer(app))
    const response = await httpCall(server.port, { path: '/orders', key: key(), contentType: json, body: '{"amount":5}' })
    expect(await response.json()).toEqual({ got: { amount: 5 }, held: true })
    await server.close()
  })

  it('mounted after express.json(), it fingerprints the parsed body: key order replays, another body is 422', async () => {
    const app = express()
    app.use(express.json())
    app.use(expressIdempotency({ store: backend.store, scope }))
    let runs = 0
    app.post('/orders', (req, res) => {
      res.status(201).json({ got: req.body, run: ++runs })
    })
    const server = await listen(http.createServer(app))
    const k = key()
    const send = (body: string): Promise<Response> => httpCall(server.port, { path: '/orders', key: k, contentType: json, body })
    expect((await send('{"a":1,"b":2}')).status).toBe(201)
    const reordered = await send('{ "b": 2, "a": 1 }')
    expect(reordered.headers.get('idempotent-replayed')).toBe('true')
    expect((await send('{"a":1,"b":3}')).status).toBe(422)
    expect(runs).toBe(1)
    await server.close()
  })

  // The hold is on the response itself, so it survives what Express does to the
  // response's prototype (a mounted sub-app gives it its own) and stands in front of
  // methods an earlier middleware wrapped (as on-headers and compression do), whose
  // wrappers still run when the answer is sent.
  it('holds the answer of a route in a mounted sub-app, behind an earlier wrapper of writeHead and end, and through flushHeaders', async () => {
    const app = express()
    app.use((_req, res, next) => {
      const { writeHead, end } = res
      res.writeHead = function (this: typeof res, ...args: unknown[]) {
        this.setHeader('x-wrapped', 'yes')
        return Reflect.apply(writeHead, this, args)
      } as typeof res.writeHead
      res.end = function (this: typeof res, ...args: unknown[]) {
        return Reflect.apply(end, this, args)
      } as typeof res.end
      next()
    })
    app.use(expressIdempotency({ store: backend.store, scope }))
    const sub = express()
    sub.use(express.json())
    const seen: Array<{ afterFlush: boolean; afterAnswer: boolean }> = []
    let runs = 0
    sub.post('/orders', (req, res) => {
      res.flushHeaders()
      const afterFlush = res.headersSent
      res.status(201).json({ got: req.body, run: ++runs })
      seen.push({ afterFlush, afterAnswer: res.headersSent || res.writableEnded })
    })
    app.use('/v1', sub)
    const server = await listen(http.createServer(app))
    const k = key()
    const send = (): Promise<Response> => httpCall(server.port, { path: '/v1/orders', key: k, contentType: json, body: '{"amount":5}' })
    const first = await send()
    expect(first.status).toBe(201)
    expect(first.headers.get('x-wrapped')).toBe('yes')
    expect(await first.json()).toEqual({ got: { amount: 5 }, run: 1 })
    expect(seen).toEqual([{ afterFlush: false, afterAnswer: false }])
    const replay = await send()
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(await replay.json()).toEqual({ got: { amount: 5 }, run: 1 })
    expect(runs).toBe(1)
    await server.close()
  })

  it('mounted after something that read the body and kept nothing, it refuses (500 invalid-option) rather than fingerprint an empty body', async () => {
    const app = express()
    app.use((req, _res, next) => {
      req.resume()
      req.on('end', () => next())
    })
    app.use(expressIdempotency({ store: backend.store, scope }))
    let runs = 0
    app.post('/orders', (_req, res) => void res.status(201).json({ run: ++runs }))
    const server = await listen(http.createServer(app))
    const response = await httpCall(server.port, { path: '/orders', key: key(), contentType: json, body: '{"amount":5}' })
    expect(response.status).toBe(500)
    expect(await response.json()).toMatchObject({ code: 'invalid-option' })
    expect(runs).toBe(0)
    await server.close()
  })

  it('a client that leaves while the route runs: the route finishes, effect and key commit together, a retry replays', () =>
    expectLeftMidRoute(async (slow) => {
      const app = express()
      app.use(expressIdempotency({ store: backend.store, scope }))
      app.post('/slow', async (req, res) => {
        await slow(req.idem!)
        res.status(201).json({ ok: true })
      })
      return listen(http.createServer(app))
    }))
})

/**
 * Sends `POST /slow` with `headers` and leaves once its route has started (`entered`):
 * the connection is destroyed, and then the route is let go on (`gate`).
 */
async function leaveWhileRouteRuns(port: number, headers: Record<string, string>, entered: Latch, gate: Latch): Promise<void> {
  const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/slow', headers })
  request.on('error', () => {})
  request.end('x')
  await entered.promise
  request.destroy()
  // Let the server see the connection close before the route goes on.
  await sleep(50)
  gate.open()
}

/**
 * A client leaves while its route runs: the route finishes, its effect and its key commit
 * together, and a retry replays. `start` serves `POST /slow` behind the middleware,
 * calling `slow` with the route's key (it writes the effect once the client has gone)
 * before answering 201.
 */
async function expectLeftMidRoute(start: (slow: (idem: IdempotencyContext<unknown>) => Promise<void>) => Promise<Listening>): Promise<void> {
  const gate = latch()
  const entered = latch()
  let runs = 0
  const server = await start(async (idem) => {
    runs++
    entered.open()
    await gate.promise
    await backend.writeEffect(idem.tx as SqliteDatabase, idem.key)
  })
  const k = `k-${randomUUID()}`
  await leaveWhileRouteRuns(server.port, { 'idempotency-key': k }, entered, gate)
  await eventually(async () => (await backend.countKeys(k)) === 1)
  expect(await backend.countEffects(k)).toBe(1)
  const retry = await httpCall(server.port, { path: '/slow', key: k, body: 'x' })
  expect(retry.headers.get('idempotent-replayed')).toBe('true')
  expect(runs).toBe(1)
  await server.close()
}

/** An event stream of its own, and the warnings it heard. */
function warnings(): { events: EventStream; told: WarningEvent[] } {
  const events = createEventStream()
  const told: WarningEvent[] = []
  events.subscribe((event) => event.type === 'warning' && told.push(event))
  return { events, told }
}

describe('fastify: a route that answers twice, or takes its reply over', () => {
  it('a second reply.send is dropped and told: the first answer is sent and stored', async () => {
    const { events, told } = warnings()
    const app = Fastify()
    await app.register(fastifyIdempotency({ store: backend.store, scope, events }))
    app.post('/orders', async (request, reply) => {
      await backend.writeEffect(request.idem!.tx as SqliteDatabase, request.idem!.key)
      void reply.code(201).send({ first: true })
      return reply.code(202).send({ second: true })
    })
    await app.ready()
    const k = `k-${randomUUID()}`
    const first = await app.inject({ method: 'POST', url: '/orders', headers: { 'idempotency-key': k } })
    expect([first.statusCode, first.json()]).toEqual([201, { first: true }])
    const replay = await app.inject({ method: 'POST', url: '/orders', headers: { 'idempotency-key': k } })
    expect([replay.statusCode, replay.json(), replay.headers['idempotent-replayed']]).toEqual([201, { first: true }, 'true'])
    expect(await backend.countEffects(k)).toBe(1)
    expect(told.map((event) => event.code)).toEqual(['route-failed-after-answer'])
    expect(told[0]!.message).toContain('POST /orders answered 201, then something answered again with 202')
    await app.close()
  })

  it('a route that catches the refused hijack and writes 201 on reply.raw: nothing of it is sent, the client gets 500 route-hijacked', async () => {
    const { events, told } = warnings()
    const app = Fastify()
    await app.register(fastifyIdempotency({ store: backend.store, scope, events }))
    let runs = 0
    app.post('/orders', async (request, reply) => {
      runs++
      await backend.writeEffect(request.idem!.tx as SqliteDatabase, request.idem!.key)
      try {
        reply.hijack()
      } catch {
        // Written as if the reply had been taken over.
      }
      reply.raw.writeHead(201, { 'content-type': 'text/plain', 'x-raw': 'yes' })
      reply.raw.end('created')
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    await expectRefusedTwice((app.server.address() as AddressInfo).port, () => runs, told)
    await app.close()
  })
})

describe('koa: a route that takes the response over', () => {
  for (const [name, Framework] of [['Koa 3', Koa], ['Koa 2', koa2]] as const) {
    it(`${name}: a route that catches the refused ctx.respond = false and writes 201 on ctx.res: nothing of it is sent, the client gets 500 route-hijacked`, async () => {
      const { events, told } = warnings()
      const app = new Framework<IdemState<SqliteDatabase>>()
      app.use(koaIdempotency({ store: backend.store, scope, events }))
      let runs = 0
      app.use(async (ctx) => {
        runs++
        await backend.writeEffect(ctx.state.idem!.tx, ctx.state.idem!.key)
        try {
          ctx.respond = false
        } catch {
          // Written as if the response had been taken over.
        }
        ctx.res.writeHead(201, { 'content-type': 'text/plain', 'x-raw': 'yes' })
        ctx.res.end('created')
      })
      const server = await listen(http.createServer(app.callback()))
      await expectRefusedTwice(server.port, () => runs, told)
      await server.close()
    })
  }
})

/**
 * Twice, a route whose take-over of its response was refused (it then wrote 201 on the
 * raw response anyway): the client gets 500 route-hijacked, never the raw answer, the
 * effect is rolled back and nothing is stored; each refusal is warned of.
 */
async function expectRefusedTwice(port: number, runs: () => number, told: WarningEvent[]): Promise<void> {
  const k = `k-${randomUUID()}`
  for (const attempt of [1, 2]) {
    const response = await httpCall(port, { path: '/orders', key: k, contentType: json, body: '{}' })
    expect(response.status).toBe(500)
    expect(response.headers.get('x-raw')).toBeNull()
    expect(await response.json()).toMatchObject({ code: 'route-hijacked' })
    expect(await backend.countEffects(k)).toBe(0)
    expect(runs()).toBe(attempt)
  }
  expect(await backend.countKeys(k)).toBe(0)
  expect(told.map((event) => event.code)).toEqual(['route-hijacked', 'route-hijacked'])
}

describe('fastify', () => {
  it("Fastify's own JSON parser reads the body after the plugin; a failed schema validation is rolled back", async () => {
    const app = Fastify()
    await app.register(fastifyIdempotency({ store: backend.store, scope }))
    let runs = 0
    app.post(
      '/orders',
      { schema: { body: { type: 'object', required: ['amount'], properties: { amount: { type: 'integer' } } } } },
      async (request, reply) => reply.code(201).send({ got: request.body, run: ++runs, held: request.idem !== null }),
    )
    await app.ready()
    const k = key()
    const ok = await app.inject({ method: 'POST', url: '/orders', headers: { 'idempotency-key': k, 'content-type': json }, payload: '{"amount":5}' })
    expect(ok.statusCode).toBe(201)
    expect(ok.json()).toEqual({ got: { amount: 5 }, run: 1, held: true })
    const replay = await app.inject({ method: 'POST', url: '/orders', headers: { 'idempotency-key': k, 'content-type': json }, payload: '{ "amount": 5 }' })
    expect(replay.headers['idempotent-replayed']).toBe('true')
    expect(replay.json()).toEqual(ok.json())

    const invalidKey = `k-${randomUUID()}`
    const invalid = await app.inject({ method: 'POST', url: '/orders', headers: { 'idempotency-key': invalidKey, 'content-type': json }, payload: '{"amount":"five"}' })
    expect(invalid.statusCode).toBe(400)
    expect(await backend.countKeys(invalidKey)).toBe(0)
    expect(runs).toBe(1)
    await app.close()
  })

  for (const answers of [true, false]) {
    it(`a client that leaves while the route runs: effect and key ${answers ? 'commit together when the route still answers' : 'roll back together when the route gives up'}`, async () => {
      const gate = latch()
      const entered = latch()
      const app = Fastify()
      await app.register(fastifyIdempotency({ store: backend.store, scope }))
      app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body))
      const finished = latch()
      let runs = 0
      app.post('/slow', async (request, reply) => {
        runs++
        entered.open()
        await gate.promise
        try {
          await backend.writeEffect(request.idem!.tx as SqliteDatabase, request.idem!.key)
          // A route may notice that nobody is listening and return without a reply.
          if (answers) return await reply.code(201).send({ ok: true })
          return undefined
        } finally {
          finished.open()
        }
      })
      await app.listen({ host: '127.0.0.1', port: 0 })
      const port = (app.server.address() as AddressInfo).port
      const k = `k-${randomUUID()}`
      await leaveWhileRouteRuns(port, { 'idempotency-key': k, 'content-type': 'text/plain' }, entered, gate)
      await finished.promise
      const expected = answers ? 1 : 0
      await eventually(async () => (await backend.countKeys(k)) === expected && (await backend.countEffects(k)) === expected)
      // The key's lock was let go either way: the retry replays or runs.
      const retry = await httpCall(port, { path: '/slow', key: k, contentType: 'text/plain', body: 'x' })
      expect(retry.headers.get('idempotent-replayed')).toBe(answers ? 'true' : null)
      expect(runs).toBe(answers ? 1 : 2)
      await app.close()
    })
  }
})

describe('hono', () => {
  // The route reads the body through c.req in every way Hono offers; each must see the
  // bytes the middleware read, in process (app.request) and on @hono/node-server, whose
  // requests read their body straight off the socket.
  const readers: Record<string, (c: { req: import('hono').HonoRequest }) => Promise<string>> = {
    text: (c) => c.req.text(),
    json: async (c) => JSON.stringify(await c.req.json()),
    arrayBuffer: async (c) => Buffer.from(await c.req.arrayBuffer()).toString('utf8'),
    blob: async (c) => (await c.req.blob()).text(),
    parseBody: async (c) => JSON.stringify(await c.req.parseBody()),
    cloneRawRequest: async (c) => (await cloneRawRequest(c.req)).text(),
  }
  const bodies: Record<string, { type: string; body: string }> = {
    small: { type: json, body: '{"amount":5,"note":"é"}' },
    large: { type: json, body: JSON.stringify({ blob: 'x'.repeat(100_000) }) },
    form: { type: 'application/x-www-form-urlencoded', body: 'amount=5&note=%C3%A9' },
  }
  function readingApp(read: (c: { req: import('hono').HonoRequest }) => Promise<string>): { app: Hono<{ Variables: IdemVariables<unknown> }>; runs: () => number } {
    const app = new Hono<{ Variables: IdemVariables<unknown> }>()
    app.use(honoIdempotency({ store: backend.store, scope }))
    let runs = 0
    app.post('/orders', async (c) => {
      runs++
      return c.text(await read(c), 201)
    })
    return { app, runs: () => runs }
  }
  for (const [reader, read] of Object.entries(readers)) {
    for (const [name, { type, body }] of Object.entries(bodies)) {
      if (reader === 'json' && type !== json) continue
      const expected = async (): Promise<string> => {
        // What the same reader gives with no middleware in front.
        const bare = new Hono()
        bare.post('/orders', async (c) => c.text(await read(c)))
        return (await bare.request('/orders', { method: 'POST', headers: { 'content-type': type }, body })).text()
      }
      it(`c.req.${reader} sees the ${name} body, in process and on node-server, and the retry replays it`, async () => {
        const want = await expected()
        expect(want.length).toBeGreaterThan(0)
        const { app, runs } = readingApp(read)
        const k = key()
        const init = { method: 'POST', headers: { 'idempotency-key': k, 'content-type': type }, body }
        const inProcess = await app.request('/orders', init)
        expect(inProcess.status).toBe(201)
        expect(await inProcess.text()).toBe(want)

        const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 })
        await new Promise((resolve) => server.once('listening', resolve))
        try {
          const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`
          const fresh = await fetch(url, { ...init, headers: { ...init.headers, 'idempotency-key': key() } })
          expect(fresh.status).toBe(201)
          expect(await fresh.text()).toBe(want)
          const retry = await fetch(url, init)
          expect(retry.headers.get('idempotent-replayed')).toBe('true')
          expect(await retry.text()).toBe(want)
          expect(runs()).toBe(2)
        } finally {
          await new Promise((resolve) => server.close(resolve))
        }
      })
    }
  }

  it('leaves the raw request consumed, as any middleware that reads the body does', async () => {
    const app = new Hono<{ Variables: IdemVariables<unknown> }>()
    app.use(honoIdempotency({ store: backend.store, scope }))
    app.post('/orders', async (c) => c.json({ used: c.req.raw.bodyUsed, text: await c.req.text() }, 201))
    const response = await app.request('/orders', { method: 'POST', headers: { 'idempotency-key': key(), 'content-type': json }, body: '{"a":1}' })
    expect(await response.json()).toEqual({ used: true, text: '{"a":1}' })
  })

  it('sees the body even when an earlier middleware read it through c.req', async () => {
    const app = new Hono<{ Variables: IdemVariables<unknown> & { peeked: unknown } }>()
    app.use(async (c, next) => {
      c.set('peeked', await c.req.json())
      await next()
    })
    app.use(honoIdempotency({ store: backend.store, scope }))
    let runs = 0
    app.post('/orders', async (c) => c.json({ peeked: c.get('peeked'), got: await c.req.json(), run: ++runs }, 201))
    const k = key()
    const send = async (body: string): Promise<Response> => app.request('/orders', { method: 'POST', headers: { 'idempotency-key': k, 'content-type': json }, body })
    expect(await (await send('{"amount":5}')).json()).toEqual({ peeked: { amount: 5 }, got: { amount: 5 }, run: 1 })
    expect((await send('{"amount":6}')).status).toBe(422)
    expect(runs).toBe(1)
  })
})

/** A store whose claims start, open `claimed`, and go on only once `gate` opens. */
function claimGatedStore(): { store: typeof backend.store; claimed: ReturnType<typeof latch>; gate: ReturnType<typeof latch> } {
  const claimed = latch()
  const gate = latch()
  const store: typeof backend.store = {
    ...backend.store,
    begin: async (request) => {
      claimed.open()
      await gate.promise
      return backend.store.begin(request)
    },
  }
  return { store, claimed, gate }
}

/**
 * Sends a whole protected POST /orders on a raw socket; once its key is being claimed,
 * the client gives up (a reset) and the server notices before the claim returns.
 */
async function hangUpDuringClaim(port: number, serverSocket: () => net.Socket, gated: ReturnType<typeof claimGatedStore>, k: string, body: string): Promise<void> {
  const socket = net.connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.on('error', () => {})
  socket.write(
    `POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: ${k}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body}`,
  )
  await gated.claimed.promise
  socket.resetAndDestroy()
  serverSocket().destroy()
  gated.gate.open()
  await sleep(100) // the first attempt settles
}

/**
 * A client hangs up while its key is being claimed (`serve` makes the app over the gated
 * store; its route pushes what it got on `seen` and answers `{ got }`): the route does
 * not run and nothing is stored; the retry runs it with the body, which it got as `got`.
 */
async function expectHangUpRollsBack(serve: (store: typeof backend.store) => http.RequestListener, seen: unknown[], got: unknown): Promise<void> {
  const gated = claimGatedStore()
  let serverSocket: net.Socket | undefined
  const server = http.createServer(serve(gated.store))
  server.once('connection', (socket) => (serverSocket = socket))
  const listening = await listen(server)
  try {
    const k = key()
    const body = '{"amount":5}'
    await hangUpDuringClaim(listening.port, () => serverSocket!, gated, k, body)
    expect(seen).toEqual([])
    expect(await backend.countKeys(k.slice(1, -1))).toBe(0)

    const retry = await fetch(`http://127.0.0.1:${listening.port}/orders`, { method: 'POST', headers: { 'idempotency-key': k, 'content-type': json }, body })
    expect(retry.status).toBe(201)
    expect(retry.headers.get('idempotent-replayed')).toBe(null)
    expect(await retry.json()).toEqual({ got })
    expect(seen).toEqual([got])
  } finally {
    await listening.close()
  }
}

describe('express: a client that hangs up while its key is being claimed', () => {
  // Express's body parsers skip a request whose client has gone ("already finished"), so
  // a route started then would run without its body, under a key whose fingerprint covers
  // that body, and its retry would replay what it made of nothing.
  it('the route does not run and nothing is stored; the retry runs the route with the body', async () => {
    const seen: unknown[] = []
    await expectHangUpRollsBack(
      (store) => {
        const app = express()
        app.use(expressIdempotency({ store, scope }))
        app.use(express.json())
        app.post('/orders', (req, res) => {
          seen.push(req.body)
          res.status(201).json({ got: req.body ?? null })
        })
        return app
      },
      seen,
      { amount: 5 },
    )
  })
})

describe('koa: a client that hangs up while its key is being claimed', () => {
  // A body parser after idem may skip a request whose client has gone: the route must
  // not run, and store what it made of no body, as on Express.
  for (const [name, Framework] of [['Koa 3', Koa], ['Koa 2', koa2]] as const) {
    it(`${name}: the route does not run and nothing is stored; the retry runs the route with the body`, async () => {
      const seen: string[] = []
      await expectHangUpRollsBack(
        (store) => {
          const app = new Framework<IdemState<unknown>>()
          app.use(koaIdempotency({ store, scope }))
          app.use(async (ctx) => {
            const chunks: Buffer[] = []
            for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
            seen.push(Buffer.concat(chunks).toString('utf8'))
            ctx.status = 201
            ctx.body = { got: seen.at(-1) }
          })
          return app.callback()
        },
        seen,
        '{"amount":5}',
      )
    })
  }
})

describe('koa: a client that leaves while the route runs', () => {
  it('the route finishes, effect and key commit together, a retry replays', () =>
    expectLeftMidRoute(async (slow) => {
      const app = new Koa<IdemState<unknown>>()
      app.use(koaIdempotency({ store: backend.store, scope }))
      app.use(async (ctx) => {
        await slow(ctx.state.idem!)
        ctx.status = 201
        ctx.body = { ok: true }
      })
      return listen(http.createServer(app.callback()))
    }))
})

describe('fastify: a client that hangs up while its key is being claimed', () => {
  it('the route never runs without its body, and the retry runs it with the body', async () => {
    const gated = claimGatedStore()
    const seen: unknown[] = []
    const app = Fastify()
    await app.register(fastifyIdempotency({ store: gated.store, scope }))
    app.post('/orders', async (request, reply) => {
      seen.push(request.body)
      return reply.code(201).send({ got: request.body ?? null })
    })
    let serverSocket: net.Socket | undefined
    app.server.once('connection', (socket: net.Socket) => (serverSocket = socket))
    await app.listen({ host: '127.0.0.1', port: 0 })
    const port = (app.server.address() as AddressInfo).port
    try {
      const k = key()
      const body = '{"amount":5}'
      await hangUpDuringClaim(port, () => serverSocket!, gated, k, body)
      expect(seen.filter((b) => b === undefined || b === null)).toEqual([])

      const retry = await fetch(`http://127.0.0.1:${port}/orders`, { method: 'POST', headers: { 'idempotency-key': k, 'content-type': json }, body })
      expect(retry.status).toBe(201)
      expect(await retry.json()).toEqual({ got: { amount: 5 } })
    } finally {
      await app.close()
    }
  })
})

describe('an upload over maxBodyBytes on a real socket', () => {
  for (const [name, start] of [
    [
      'express',
      async () => {
        const app = express()
        app.use(expressIdempotency({ store: backend.store, scope, maxBodyBytes: 1024 }))
        app.use((_req, res) => void res.status(201).end())
        return listen(http.createServer(app))
      },
    ],
    [
      'koa',
      async () => {
        const app = new Koa()
        app.use(koaIdempotency({ store: backend.store, scope, maxBodyBytes: 1024 }))
        app.use((ctx) => void (ctx.status = 201))
        return listen(http.createServer(app.callback()))
      },
    ],
    [
      'fastify',
      async () => {
        const app = Fastify()
        await app.register(fastifyIdempotency({ store: backend.store, scope, maxBodyBytes: 1024 }))
        app.addContentTypeParser('*', (_request, _payload, done) => done(null))
        app.post('/orders', async (_request, reply) => reply.code(201).send())
        await app.listen({ host: '127.0.0.1', port: 0 })
        return { port: (app.server.address() as AddressInfo).port, close: () => app.close() }
      },
    ],
  ] as const) {
    it(`${name}: a streamed 8 MB body gets 413 at once and the connection closes, unread`, async () => {
      const server = await start()
      const answer = await new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const request = http.request(
          { host: '127.0.0.1', port: server.port, method: 'POST', path: '/orders', headers: { 'idempotency-key': key(), 'content-type': 'application/octet-stream' } },
          (response) => {
            response.resume()
            resolve({ status: response.statusCode!, connection: response.headers.connection })
          },
        )
        request.on('error', reject)
        // Far more than the socket buffers hold: the server must answer before reading it all.
        const chunk = Buffer.alloc(64 * 1024, 1)
        let sent = 0
        const pump = (): void => {
          while (sent < 128 && request.write(chunk)) sent++
          if (sent < 128) request.once('drain', pump)
          else request.end()
        }
        pump()
      })
      expect(answer).toEqual({ status: 413, connection: 'close' })
      await server.close()
    })
  }
})
