import Koa, { type Context, type Middleware } from 'koa'
import koa2 from 'koa2'
import { randomUUID } from 'node:crypto'
import http from 'node:http'
import { Readable } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import { createEventStream } from '../../src/core/events.js'
import { idempotency, type IdemState } from '../../src/http/adapters/koa/index.js'
import type { IdempotencyOptions } from '../../src/http/options.js'
import { memoryStore } from '../../src/stores/memory/index.js'
import type { SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { latch } from './support/app.js'
import { sqliteBackend } from './support/backends.js'
import { httpCall } from './support/frontends.js'

// What is particular to the Koa adapter's wiring, beyond the shared conformance table:
// body parsers before and after the middleware, the bodies Koa sends (streams, none, a
// no-body status), a thrown HTTP error, on Koa 3 and on Koa 2. Clients that leave, an
// upload over the limit and a caught take-over are in adapters.test.ts, beside the
// other adapters'.

const backend = sqliteBackend('idem-http-adapters-koa')
afterAll(() => backend.close())
const scope = (): string => 'acct'
const key = (): string => `"k-${randomUUID()}"`
const json = 'application/json'

type App = Koa<IdemState<SqliteDatabase>>
const KOAS: ReadonlyArray<[string, typeof Koa]> = [
  ['Koa 3', Koa],
  ['Koa 2', koa2],
]

async function textOf(stream: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * A JSON body parser as `@koa/bodyparser` is one: the parsed body on `ctx.request.body`,
 * and (`keepsText`) the text it parsed on `ctx.request.rawBody`; koa-body keeps only the
 * parsed body. It skips a request whose body something parsed already.
 */
function jsonParser(keepsText: boolean): Middleware {
  return async (ctx, next) => {
    if (parsedOf(ctx) === undefined && ctx.method === 'POST') {
      const text = await textOf(ctx.req)
      Object.assign(ctx.request, { body: text === '' ? {} : JSON.parse(text) }, keepsText ? { rawBody: text } : {})
    }
    await next()
  }
}

const parsedOf = (ctx: Context): unknown => Reflect.get(ctx.request, 'body')

async function serve(app: App): Promise<{ port: number; server: http.Server; close(): Promise<void> }> {
  app.silent = true
  const server = http.createServer(app.callback())
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

function protecting(Framework: typeof Koa, options: Partial<IdempotencyOptions<SqliteDatabase, Context>> = {}): App {
  const app: App = new Framework<IdemState<SqliteDatabase>>()
  app.use(idempotency({ store: backend.store, scope, ...options }))
  return app
}

for (const [name, Framework] of KOAS) {
  describe(`${name}: body parsers`, () => {
    it('mounted before the body parser, the route gets the parsed body, and the retry replays', async () => {
      const app = protecting(Framework)
      app.use(jsonParser(true))
      let runs = 0
      app.use((ctx) => {
        ctx.status = 201
        ctx.body = { got: parsedOf(ctx), held: ctx.state.idem !== undefined, run: ++runs }
      })
      const server = await serve(app)
      const call = { path: '/orders', key: key(), contentType: json, body: '{"amount":5}' }
      expect(await (await httpCall(server.port, call)).json()).toEqual({ got: { amount: 5 }, held: true, run: 1 })
      const replay = await httpCall(server.port, { ...call, body: '{ "amount": 5 }' })
      expect([replay.headers.get('idempotent-replayed'), await replay.json()]).toEqual(['true', { got: { amount: 5 }, held: true, run: 1 }])
      await server.close()
    })

    for (const keepsText of [true, false]) {
      it(`mounted after a body parser that keeps ${keepsText ? 'the text it parsed (rawBody)' : 'only the parsed body'}, it fingerprints that: key order replays, another body is 422`, async () => {
        const app: App = new Framework<IdemState<SqliteDatabase>>()
        app.use(jsonParser(keepsText))
        app.use(idempotency({ store: backend.store, scope }))
        let runs = 0
        app.use((ctx) => {
          ctx.status = 201
          ctx.body = { got: parsedOf(ctx), run: ++runs }
        })
        const server = await serve(app)
        const k = key()
        const send = (body: string): Promise<Response> => httpCall(server.port, { path: '/orders', key: k, contentType: json, body })
        expect((await send('{"a":1,"b":2}')).status).toBe(201)
        expect((await send('{ "b": 2, "a": 1 }')).headers.get('idempotent-replayed')).toBe('true')
        expect((await send('{"a":1,"b":3}')).status).toBe(422)
        expect(runs).toBe(1)
        await server.close()
      })
    }

    it('mounted after something that read the body and kept nothing, it refuses (500 invalid-option) rather than fingerprint an empty body', async () => {
      const app: App = new Framework<IdemState<SqliteDatabase>>()
      app.use(async (ctx, next) => {
        await textOf(ctx.req)
        await next()
      })
      app.use(idempotency({ store: backend.store, scope }))
      let runs = 0
      app.use((ctx) => void (ctx.body = { run: ++runs }))
      const server = await serve(app)
      const response = await httpCall(server.port, { path: '/orders', key: key(), contentType: json, body: '{"amount":5}' })
      expect(response.status).toBe(500)
      expect(await response.json()).toMatchObject({ code: 'invalid-option' })
      expect(runs).toBe(0)
      await server.close()
    })
  })
}

for (const [name, Framework] of KOAS) {
  describe(`${name}: what the route answers with`, () => {
    // Each route answers twice with the same key: the replay must be what Koa sent the first time.
    const bodies: Record<string, (ctx: Context) => void> = {
      'a Node stream': (ctx) => {
        ctx.type = 'text/csv'
        ctx.body = Readable.from(['id,amount\n', '1,5\n'])
      },
      'no body (Koa answers its 404 Not Found)': () => {},
      'a status with no body': (ctx) => void (ctx.status = 204),
      'a Buffer': (ctx) => {
        ctx.status = 201
        ctx.body = Buffer.from([0xde, 0xad, 0xbe, 0xef])
      },
      'ctx.body = null, then a status that has a body and a type': (ctx) => {
        ctx.body = null
        ctx.status = 202
        ctx.type = 'json'
      },
      ...(Framework === Koa
        ? {
            'a Web Response (Koa 3)': (ctx: Context) => void (ctx.body = new Response('made', { status: 201, headers: { 'content-type': 'text/plain', location: '/made/1' } })),
          }
        : {}),
    }
    for (const [what, answer] of Object.entries(bodies)) {
      it(`${what}: sent as Koa sends it, stored, and replayed byte for byte`, async () => {
        const bare = new Framework()
        bare.use((ctx) => answer(ctx))
        const app = protecting(Framework)
        let runs = 0
        app.use((ctx) => {
          runs++
          answer(ctx)
        })
        const [plain, server] = await Promise.all([serve(bare), serve(app)])
        const call = { path: '/export', key: key(), body: 'x' }
        const expected = await httpCall(plain.port, call)
        const first = await httpCall(server.port, call)
        const replay = await httpCall(server.port, call)
        const bytes = new Uint8Array(await expected.arrayBuffer())
        for (const response of [first, replay]) {
          expect(response.status).toBe(expected.status)
          expect(response.headers.get('content-type')).toBe(expected.headers.get('content-type'))
          expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes)
        }
        expect(replay.headers.get('idempotent-replayed')).toBe('true')
        expect(runs).toBe(1)
        await Promise.all([plain.close(), server.close()])
      })
    }

    it('ctx.throw(404) is a throw: Koa answers it, nothing is stored and the retry runs the route again', async () => {
      const app = protecting(Framework)
      let runs = 0
      app.use(async (ctx) => {
        await backend.writeEffect(ctx.state.idem!.tx, ctx.state.idem!.key)
        ctx.throw(404, `no such order ${++runs}`)
      })
      const server = await serve(app)
      const k = `k-${randomUUID()}`
      for (const attempt of [1, 2]) {
        const response = await httpCall(server.port, { path: '/orders', key: k, body: 'x' })
        expect([response.status, await response.text()]).toEqual([404, `no such order ${attempt}`])
      }
      expect(await backend.countEffects(k)).toBe(0)
      expect(await backend.countKeys(k)).toBe(0)
      await server.close()
    })
  })
}

describe('Koa: a route still running at its deadline', () => {
  it('is answered 503 overran at once, with the headers set before it (not its own), while the middleware around idem still waits', async () => {
    const gate = latch()
    const routeDone = latch()
    const app = new Koa<IdemState<unknown>>()
    app.silent = true
    const errors: unknown[] = []
    app.on('error', (error) => errors.push(error))
    app.use(async (ctx, next) => {
      ctx.set('x-early', 'yes')
      await next()
      // Work after the route (a log write, say) that takes as long as the late route: Koa
      // sends ctx only after it, by when the route has changed ctx again.
      await routeDone.promise
    })
    app.use(idempotency({ store: memoryStore(), scope, deadlineMs: 300, events: createEventStream() }))
    app.use(async (ctx) => {
      ctx.set('x-route', 'yes')
      await gate.promise
      ctx.status = 201
      ctx.body = { late: true }
      routeDone.open()
    })
    const server = await serve(app)
    const response = await httpCall(server.port, { path: '/orders', key: key(), contentType: json, body: '{}' })
    expect(response.status).toBe(503)
    expect(response.headers.get('x-early')).toBe('yes')
    expect(response.headers.get('x-route')).toBeNull()
    expect(await response.json()).toMatchObject({ code: 'overran' })
    gate.open()
    await routeDone.promise
    expect(errors).toEqual([])
    await server.close()
  })
})
