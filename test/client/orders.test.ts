import type { AddressInfo } from 'node:net'
import { serve, type ServerType } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient, type FetchResult } from '../../src/client/index.js'
import { idempotency } from '../../src/http/fetch/index.js'
import type { PgClient } from '../../src/stores/postgres/index.js'
import { seededRandom, startFaultProxy, type FaultProxy } from '../../src/testing/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { ordersApp, pooled, type OrderBody, type OrdersApp, type SeenRequest } from './orders-app.js'

const ORDERS = 1_000
const CONCURRENCY = 20
const DROP = 0.3

const db = await testSchema('idem_client_orders', CONCURRENCY)
afterAll(() => db?.drop())

describe.skipIf(db === undefined)('1,000 orders through a proxy that drops 30% of responses after the commit', () => {
  const { pool, schema } = db as TestSchema
  let app: OrdersApp
  let server: ServerType
  let proxy: FaultProxy
  // Every request as it reached the server, recorded before the middleware sees it.
  const seen: SeenRequest[] = []

  beforeAll(async () => {
    app = await ordersApp(pool, schema)
    const protect = idempotency<PgClient>({
      store: app.store,
      scope: (request) => request.headers.get('x-account') ?? 'anonymous',
      routes: ['/orders'],
    })
    const port = await new Promise<number>((resolve) => {
      server = serve(
        {
          hostname: '127.0.0.1',
          port: 0,
          fetch: (request: Request) => {
            seen.push({ call: request.headers.get('x-call'), key: request.headers.get('idempotency-key') })
            return protect(request, app.placeOrder)
          },
        },
        (info: AddressInfo) => resolve(info.port),
      )
    })
    proxy = await startFaultProxy({ target: `http://127.0.0.1:${port}`, dropResponseProbability: DROP, seed: 2026 })
  })
  afterAll(async () => {
    await proxy?.close()
    await new Promise((resolve) => server?.close(resolve))
  })

  let results: Array<{ result: FetchResult; order: OrderBody; body: { orderId: number } & OrderBody }> = []

  it('applies every order exactly once, and every call gets the original 201', async () => {
    let retries = 0
    const client = createClient({
      backoff: { baseMs: 5, maxMs: 50 },
      // 0.3^12 ≈ 5e-7 per call: running out of attempts is not a plausible outcome.
      maxAttempts: 12,
      deadlineMs: 30_000,
      random: seededRandom(7),
      onRetry: () => retries++,
    })
    results = await pooled(ORDERS, CONCURRENCY, async (i) => {
      const order = { customer: `customer-${i % 37}`, amount: 100 + i }
      const result = await client.fetch(`${proxy.url}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-account': 'acct-1', 'x-call': String(i) },
        body: JSON.stringify(order),
      })
      return { result, order, body: (await result.response.json()) as { orderId: number } & OrderBody }
    })

    const { orders, charges, distinctKeys } = await app.counts()
    const { dropped, forwarded, delivered } = proxy.stats
    const attempts = results.reduce((n, { result }) => n + result.attempts, 0)
    const replays = results.filter(({ result }) => result.replayed).length
    console.log(
      `CLIENT orders=${ORDERS} rows=${orders} charges=${charges} attempts=${attempts} drops=${dropped} retries=${retries} replays=${replays}`,
    )

    expect({ orders, charges, distinctKeys }).toEqual({ orders: ORDERS, charges: ORDERS, distinctKeys: ORDERS })
    // The faults really happened, at about the configured rate...
    expect(dropped).toBeGreaterThan(ORDERS * DROP * 0.8)
    // ...every attempt reached the server and was either dropped or delivered...
    expect(forwarded).toBe(attempts)
    expect(delivered).toBe(ORDERS)
    expect(seen).toHaveLength(attempts)
    // ...and each drop cost exactly one retry, which the server answered from the stored outcome.
    expect(retries).toBe(dropped)
    expect(replays).toBe(results.filter(({ result }) => result.attempts > 1).length)
    expect(replays).toBeGreaterThan(0)

    for (const { result, order, body } of results) {
      expect(result.response.status).toBe(201)
      expect(result.replayed).toBe(result.attempts > 1)
      // The original 201: the body names the one order row this key created.
      const rows = await app.orderFor(result.key)
      expect(rows).toEqual([{ id: body.orderId, ...order }])
      expect(body).toEqual({ orderId: body.orderId, ...order })
      expect(result.response.headers.get('location')).toBe(`/orders/${body.orderId}`)
    }
  })

  it('sent the same key on every attempt of a call, and never the same key for two calls', () => {
    expect(results).toHaveLength(ORDERS)
    const byCall = new Map<string, string[]>()
    for (const { call, key } of seen) byCall.set(call ?? '?', [...(byCall.get(call ?? '?') ?? []), key ?? '(none)'])
    expect(byCall.size).toBe(ORDERS)
    results.forEach(({ result }, i) => {
      const keys = byCall.get(String(i)) ?? []
      expect(keys).toHaveLength(result.attempts)
      expect(new Set(keys)).toEqual(new Set([`"${result.key}"`]))
    })
    expect(new Set(results.map(({ result }) => result.key)).size).toBe(ORDERS)
    // Calls that were retried are the interesting ones: several attempts, one key.
    expect(results.some(({ result }) => result.attempts >= 3)).toBe(true)
  })
})
