import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient, ProblemError, type RetryEvent } from '../../src/client/index.js'
import { idempotency as expressIdempotency } from '../../src/http/adapters/express/index.js'
import { idempotency as fastifyIdempotency } from '../../src/http/adapters/fastify/index.js'
import { idempotency as honoIdempotency, type IdemVariables } from '../../src/http/adapters/hono/index.js'
import { idempotency as koaIdempotency, type IdemState } from '../../src/http/adapters/koa/index.js'
import type { IdempotencyContext } from '../../src/http/fetch/index.js'
import type { PgClient } from '../../src/stores/postgres/index.js'
import { seededRandom, startFaultProxy } from '../../src/testing/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { ordersApp, pooled, recordingFetch, type OrderBody, type OrdersApp, type SeenRequest } from './orders-app.js'

const db = await testSchema('idem_client_adapters')
afterAll(() => db?.drop())

interface Running {
  url: string
  close(): Promise<void>
}

/**
 * One row per server adapter: how to serve `POST /orders` (the shared `writeOrder`)
 * behind that adapter's idempotency middleware, recording each request's key before
 * the middleware sees it. Everything else in this file is shared.
 */
interface Adapter {
  name: string
  start(app: OrdersApp, seen: SeenRequest[]): Promise<Running>
}

// Each framework hands `scope` its own request.
const account = (header: string | string[] | undefined): string => (typeof header === 'string' ? header : 'anonymous')
const record = (seen: SeenRequest[], header: (name: string) => string | undefined | null): void => {
  seen.push({ call: header('x-call') ?? null, key: header('idempotency-key') ?? null, attempt: header('x-attempt') ?? null })
}

const adapters: Adapter[] = [
  {
    name: 'hono',
    async start(orders, seen) {
      const app = new Hono<{ Variables: IdemVariables<PgClient> }>()
      app.use('*', async (c, next) => {
        record(seen, (name) => c.req.header(name))
        await next()
      })
      app.use('/orders', honoIdempotency<PgClient>({ store: orders.store, scope: (c) => account(c.req.header('x-account')) }))
      app.post('/orders', async (c) => {
        const idem = c.get('idem') as IdempotencyContext<PgClient>
        const order = await orders.writeOrder(idem, await c.req.json<OrderBody>())
        return c.json(order, 201, { location: `/orders/${order.orderId}` })
      })
      return new Promise((resolve) => {
        const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) =>
          resolve({ url: `http://127.0.0.1:${info.port}`, close: () => closeServer(server as Server) }),
        )
      })
    },
  },
  {
    name: 'express',
    async start(orders, seen) {
      const app = express()
      app.use((req, _res, next) => {
        record(seen, (name) => req.get(name))
        next()
      })
      app.use(expressIdempotency<PgClient>({ store: orders.store, scope: (req) => account(req.get('x-account')) }))
      app.use(express.json())
      app.post('/orders', async (req, res) => {
        const order = await orders.writeOrder(req.idem as IdempotencyContext<PgClient>, req.body as OrderBody)
        res.status(201).location(`/orders/${order.orderId}`).json(order)
      })
      return new Promise((resolve) => {
        const server = app.listen(0, '127.0.0.1', () =>
          resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => closeServer(server) }),
        )
      })
    },
  },
  {
    name: 'koa',
    async start(orders, seen) {
      const app = new Koa<IdemState<PgClient>>()
      app.use(async (ctx, next) => {
        record(seen, (name) => ctx.get(name) || undefined)
        await next()
      })
      app.use(koaIdempotency<PgClient>({ store: orders.store, scope: (ctx) => account(ctx.get('x-account') || undefined) }))
      app.use(async (ctx) => {
        // The body as a parser after the middleware reads it: from the refilled stream.
        const chunks: Buffer[] = []
        for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
        const order = await orders.writeOrder(ctx.state.idem!, JSON.parse(Buffer.concat(chunks).toString('utf8')) as OrderBody)
        ctx.status = 201
        ctx.set('location', `/orders/${order.orderId}`)
        ctx.body = order
      })
      return new Promise((resolve) => {
        const server = app.listen(0, '127.0.0.1', () =>
          resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => closeServer(server) }),
        )
      })
    },
  },
  {
    name: 'fastify',
    async start(orders, seen) {
      const app = Fastify()
      app.addHook('onRequest', async (request) => {
        record(seen, (name) => request.headers[name] as string | undefined)
      })
      await app.register(fastifyIdempotency<PgClient>({ store: orders.store, scope: (request) => account(request.headers['x-account']) }))
      app.post('/orders', async (request, reply) => {
        const order = await orders.writeOrder(request.idem as IdempotencyContext<PgClient>, request.body as OrderBody)
        return reply.code(201).header('location', `/orders/${order.orderId}`).send(order)
      })
      const address = await app.listen({ host: '127.0.0.1', port: 0 })
      return { url: address, close: () => app.close() }
    },
  },
]

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
}

describe.skipIf(db === undefined)('the client against every server adapter', () => {
  const { pool, schema } = db as TestSchema
  let orders: OrdersApp
  beforeAll(async () => {
    orders = await ordersApp(pool, schema)
  })

  describe.each(adapters)('$name', (adapter) => {
    const seen: SeenRequest[] = []
    let server: Running
    beforeAll(async () => {
      server = await adapter.start(orders, seen)
    })
    afterAll(() => server?.close())

    const json = (order: OrderBody, call: string): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-account': `acct-${adapter.name}`, 'x-call': call },
      body: JSON.stringify(order),
    })

    it('places each order once through a proxy dropping half the responses', async () => {
      const N = 60
      const proxy = await startFaultProxy({ target: server.url, dropResponseProbability: 0.5, seed: 99 })
      try {
        const before = await orders.counts()
        const { fetch, sent } = recordingFetch()
        // No time limits: an attempt is lost only to a dropped answer or a connection that fails.
        const client = createClient({ fetch, backoff: { baseMs: 2, maxMs: 20 }, maxAttempts: 20, attemptTimeoutMs: 240_000, deadlineMs: 240_000, random: seededRandom(3) })
        const results = await pooled(N, 10, async (i) => {
          const order = { customer: `${adapter.name}-${i}`, amount: i + 1 }
          const result = await client.fetch(`${proxy.url}/orders`, json(order, `${adapter.name}-${i}`))
          return { result, order, body: (await result.response.json()) as { orderId: number } & OrderBody }
        })
        const after = await orders.counts()
        expect(after.orders - before.orders).toBe(N)
        expect(after.charges - before.charges).toBe(N)
        expect(proxy.stats.dropped).toBeGreaterThan(0)
        expect(results.filter(({ result }) => result.replayed).length).toBeGreaterThan(0)
        const arrived = new Set(seen.map((s) => s.attempt))
        for (const [i, { result, order, body }] of results.entries()) {
          expect(result.response.status).toBe(201)
          expect(await orders.orderFor(result.key)).toEqual([{ id: body.orderId, ...order }])
          expect(result.response.headers.get('location')).toBe(`/orders/${body.orderId}`)
          // This call's attempts as sent; those that reached the server all carried its key, and only its key.
          const attempts = sent.filter((attempt) => attempt.call === `${adapter.name}-${i}`)
          expect(attempts).toHaveLength(result.attempts)
          const keys = seen.filter((s) => s.call === `${adapter.name}-${i}`).map((s) => s.key)
          expect(keys).toEqual(attempts.filter((attempt) => arrived.has(attempt.id)).map(() => `"${result.key}"`))
          // A replay exactly when an earlier attempt reached the server and ran the order.
          expect(result.replayed).toBe(attempts.slice(0, -1).some((attempt) => arrived.has(attempt.id)))
        }
        expect(new Set(results.map(({ result }) => result.key)).size).toBe(N)
      } finally {
        await proxy.close()
      }
    })

    it('gets 422 fingerprint-mismatch, parsed and not retried, when a key is reused with another body', async () => {
      const client = createClient({ backoff: { baseMs: 1 } })
      const key = `reuse-${adapter.name}`
      const first = await client.fetch(`${server.url}/orders`, json({ customer: 'a', amount: 1 }, 'mismatch-1'), { key })
      expect(first.response.status).toBe(201)
      const error = (await client
        .fetch(`${server.url}/orders`, json({ customer: 'a', amount: 2 }, 'mismatch-2'), { key })
        .catch((e: unknown) => e)) as ProblemError
      expect(error).toBeInstanceOf(ProblemError)
      expect(error).toMatchObject({ status: 422, code: 'fingerprint-mismatch', attempts: 1, retryable: false, key })
      expect(error.type).toMatch(/#fingerprint-mismatch$/)
      expect(error.title).toBeTruthy()
      expect(seen.filter((s) => s.call === 'mismatch-2')).toHaveLength(1)
      expect(await orders.orderFor(key)).toHaveLength(1)
    })

    it('waits out a 409 (key in flight) by its Retry-After, then gets the first call’s answer replayed', async () => {
      const client = createClient({ backoff: { baseMs: 1 }, deadlineMs: 20_000 })
      const key = `in-flight-${adapter.name}`
      const order = { customer: 'slow', amount: 5 }
      const first = client.fetch(`${server.url}/orders`, json(order, 'slow-1'), { key })
      // The first holds the key before the duplicate is sent (its arrival alone is not
      // enough: the duplicate could claim the key first, and then nobody would release it).
      await orders.slowHeld()

      const retries: RetryEvent[] = []
      const second = createClient({ backoff: { baseMs: 1 }, deadlineMs: 20_000, onRetry: (e) => {
        retries.push(e)
        // The first call may commit now that the duplicate has been turned away once.
        orders.releaseSlow()
      } }).fetch(`${server.url}/orders`, json(order, 'slow-2'), { key })

      const [a, b] = await Promise.all([first, second])
      expect(retries[0]).toMatchObject({ status: 409, retryAfter: true, delayMs: 1_000 })
      expect(a).toMatchObject({ attempts: 1, replayed: false })
      expect(b).toMatchObject({ replayed: true })
      expect(b.attempts).toBeGreaterThanOrEqual(2)
      expect(await b.response.json()).toEqual(await a.response.json())
      expect(await orders.orderFor(key)).toHaveLength(1)
    })
  })
})
