// A request that reaches a protected handler is always protected: `routes` is matched
// the way the frameworks route (Express ignores case and a trailing slash, Hono and
// Fastify decode %XX first), failing closed; and mounting the middleware through the
// framework's own router protects whatever reaches the route. Before, `/Orders`,
// `/orders/` and `/%6Frders` ran the protected handler with no key.
import express from 'express'
import Fastify from 'fastify'
import fc from 'fast-check'
import { Hono } from 'hono'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { idempotency as expressIdempotency } from '../../src/http/adapters/express/index.js'
import { idempotency as fastifyIdempotency } from '../../src/http/adapters/fastify/index.js'
import { idempotency as honoIdempotency, type IdemVariables } from '../../src/http/adapters/hono/index.js'
import type { IdempotencyContext } from '../../src/http/options.js'
import { routingPath } from '../../src/http/routes.js'
import { postgresBackend } from './support/backends.js'

const backend = await postgresBackend('idem_http_routes')

/** What the protected handlers saw. */
interface Runs {
  protected: number
  unprotected: string[]
}

type Mounting = 'routes option' | 'framework router'

interface App {
  send(path: string, key?: string): Promise<number>
  close(): Promise<void>
}

const options = () => ({ store: backend!.store, scope: () => 'tenant' })
const ROUTES = ['/orders', '/orders/*']

function handled(runs: Runs, path: string, idem: IdempotencyContext<unknown> | null | undefined): void {
  if (idem === undefined || idem === null) runs.unprotected.push(path)
  else runs.protected++
}

async function honoApp(mounting: Mounting, runs: Runs): Promise<App> {
  const app = new Hono<{ Variables: IdemVariables<unknown> }>()
  if (mounting === 'routes option') app.use(honoIdempotency({ ...options(), routes: ROUTES }))
  else app.use('/orders/*', honoIdempotency(options()))
  const handler = (c: { req: { path: string }; get(name: 'idem'): IdempotencyContext<unknown> | undefined; text(t: string, s: 201): Response }) => {
    handled(runs, c.req.path, c.get('idem'))
    return c.text('created', 201)
  }
  app.post('/orders', (c) => handler(c))
  app.post('/orders/:id', (c) => handler(c))
  return {
    async send(path, key) {
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (key !== undefined) headers['idempotency-key'] = key
      return (await app.request(`http://localhost${path}`, { method: 'POST', headers, body: '{}' })).status
    },
    close: async () => {},
  }
}

async function expressApp(mounting: Mounting, runs: Runs): Promise<App> {
  const app = express()
  const handler = (req: express.Request, res: express.Response) => {
    handled(runs, req.originalUrl, req.idem)
    res.status(201).send('created')
  }
  if (mounting === 'routes option') {
    app.use(expressIdempotency({ ...options(), routes: ROUTES }))
    app.post('/orders', handler)
    app.post('/orders/:id', handler)
  } else {
    const protect = expressIdempotency(options())
    app.post('/orders', protect, handler)
    app.post('/orders/:id', protect, handler)
  }
  return listening(http.createServer(app))
}

async function fastifyApp(mounting: Mounting, runs: Runs): Promise<App> {
  const app = Fastify()
  const routes = async (scope: typeof app) => {
    scope.post('/orders', async (request, reply) => {
      handled(runs, request.url, request.idem)
      return reply.code(201).send('created')
    })
    scope.post('/orders/:id', async (request, reply) => {
      handled(runs, request.url, request.idem)
      return reply.code(201).send('created')
    })
  }
  if (mounting === 'routes option') {
    await app.register(fastifyIdempotency({ ...options(), routes: ROUTES }))
    await routes(app)
  } else {
    // Registered inside the context that holds the protected routes, and only there.
    await app.register(async (scope) => {
      await scope.register(fastifyIdempotency(options()))
      await routes(scope as typeof app)
    })
  }
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  return { send: (path, key) => post(port, path, key), close: () => app.close() }
}

async function listening(server: http.Server): Promise<App> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    send: (path, key) => post(port, path, key),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** One POST over a real connection; node:http sends the path exactly as given. */
function post(port: number, path: string, key?: string): Promise<number> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key !== undefined) headers['idempotency-key'] = key
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, method: 'POST', path, headers }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode ?? 0))
    })
    request.on('error', reject)
    request.end('{}')
  })
}

// Paths a client could send for /orders and /orders/<id>: any letter's case changed,
// any character percent-encoded (upper- or lower-case hex), slashes doubled, a trailing
// slash, a detour through a dot segment.
const flags = (length: number) => fc.array(fc.boolean(), { minLength: length, maxLength: length })
const variant = fc
  .constantFrom('/orders', '/orders/42', '/orders/ord_Ab9')
  .chain((path) => fc.tuple(fc.constant(path), flags(path.length), flags(path.length), flags(path.length), fc.boolean(), fc.boolean(), fc.boolean()))
  .map(([path, upper, encoded, doubled, trailing, detour, lowerHex]) => {
    let out = ''
    for (let i = 0; i < path.length; i++) {
      const c = path[i]!
      if (c === '/') out += doubled[i] ? '//' : '/'
      else if (encoded[i]) {
        const hex = c.charCodeAt(0).toString(16).padStart(2, '0')
        out += `%${lowerHex ? hex : hex.toUpperCase()}`
      } else out += upper[i] ? c.toUpperCase() : c
    }
    if (trailing) out += '/'
    return detour ? `/v1/..${out}` : out
  })

const frameworks: Array<[string, (mounting: Mounting, runs: Runs) => Promise<App>]> = [
  ['hono', honoApp],
  ['express', expressApp],
  ['fastify', fastifyApp],
]

describe('routingPath', () => {
  it('puts every spelling a router may accept into one form', () => {
    expect(routingPath('/Orders/')).toBe('/orders')
    expect(routingPath('/%6Frders')).toBe('/orders')
    expect(routingPath('/%256Frders')).toBe('/orders')
    expect(routingPath('//orders///42')).toBe('/orders/42')
    expect(routingPath('/v1/../orders/./42')).toBe('/orders/42')
    expect(routingPath('/%E2%82%AC/%zz')).toBe('/€/%zz')
    expect(routingPath('/')).toBe('/')
  })
})

describe.skipIf(backend === undefined)('paths that reach a protected handler (Postgres)', () => {
  afterAll(() => backend?.close())

  for (const [name, start] of frameworks) {
    for (const mounting of ['routes option', 'framework router'] as const) {
      it(`${name}, ${mounting}: no spelling of a protected path runs the handler without a key, or twice with one`, async () => {
        const runs: Runs = { protected: 0, unprotected: [] }
        const app = await start(mounting, runs)
        try {
          // The spellings the review found first.
          for (const path of ['/Orders', '/orders/', '/PAYMENTS/1'.replace('PAYMENTS', 'ORDERS'), '/%6Frders', '/orders/%34%32']) {
            await app.send(path)
          }
          await fc.assert(
            fc.asyncProperty(variant, fc.uuid(), async (path, key) => {
              const before = runs.protected
              const unkeyed = await app.send(path)
              expect(unkeyed).not.toBe(201)
              const first = await app.send(path, key)
              const second = await app.send(path, key)
              expect([first, second].every((status) => status < 500)).toBe(true)
              // With a key, at most one run however the path was spelt.
              expect(runs.protected - before).toBeLessThanOrEqual(1)
            }),
            { numRuns: 60, seed: 20_261_201 },
          )
          expect(runs.unprotected).toEqual([])
        } finally {
          await app.close()
        }
      })
    }
  }
})
