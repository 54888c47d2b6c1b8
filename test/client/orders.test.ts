import type { AddressInfo } from 'node:net'
import { serve, type ServerType } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient, type FetchResult } from '../../src/client/index.js'
import { idempotency } from '../../src/http/fetch/index.js'
import type { PgClient } from '../../src/stores/postgres/index.js'
import { seededRandom, startFaultProxy, type FaultProxy } from '../../src/testing/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { ordersApp, pooled, recordingFetch, type OrderBody, type OrdersApp, type SeenRequest, type SentAttempt } from './orders-app.js'

const ORDERS = 1_000
const CONCURRENCY = 20
const DROP = 0.3
// Hang guards, not budgets: this test follows every attempt, so none may be given up on
// for being slow (a client timeout, the proxy's upstream timeout). A busy machine only
// makes the run longer.
const HANG_GUARD_MS = 240_000
// What the client sees of an attempt whose answer it never got from the server: no
// answer at all, or the proxy's own 502/504 when it could not reach the server.
const LOST = new Set<SentAttempt['outcome']>(['failed', 502, 504])

const db = await testSchema('idem_client_orders', CONCURRENCY)
afterAll(() => db?.drop())

describe.skipIf(db === undefined)('1,000 orders through a proxy that drops 30% of responses after the commit', () => {
  const { pool, schema } = db as TestSchema
  let app: OrdersApp
  let server: ServerType
  let proxy: FaultProxy
  // Every request as it reached the server, recorded before the middleware sees it.
  const seen: SeenRequest[] = []
  // Every attempt as the client sent it, and how it ended there.
  const { fetch, sent } = recordingFetch()

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
            seen.push({ call: request.headers.get('x-call'), key: request.headers.get('idempotency-key'), attempt: request.headers.get('x-attempt') })
            return protect(request, app.placeOrder)
          },
        },
        (info: AddressInfo) => resolve(info.port),
      )
    })
    proxy = await startFaultProxy({ target: `http://127.0.0.1:${port}`, dropResponseProbability: DROP, seed: 2026, upstreamTimeoutMs: HANG_GUARD_MS })
  })
  afterAll(async () => {
    await proxy?.close()
    await new Promise((resolve) => server?.close(resolve))
  })

  let results: Array<{ result: FetchResult; order: OrderBody; body: { orderId: number } & OrderBody }> = []
  // The ids of the attempts the server saw: each once, or the test fails below.
  const reached = (): Set<string | null | undefined> => new Set(seen.map((s) => s.attempt))

  it('applies every order exactly once, and every call gets the original 201', { timeout: HANG_GUARD_MS + 60_000 }, async () => {
    let retries = 0
    const client = createClient({
      fetch,
      backoff: { baseMs: 5, maxMs: 50 },
      // 0.3^12 ≈ 5e-7 per call: running out of attempts is not a plausible outcome.
      maxAttempts: 12,
      attemptTimeoutMs: HANG_GUARD_MS,
      deadlineMs: HANG_GUARD_MS,
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
    const { dropped, forwarded, delivered, abandoned, failed } = proxy.stats
    const attempts = results.reduce((n, { result }) => n + result.attempts, 0)
    const arrived = reached()
    const lost = sent.filter((attempt) => !arrived.has(attempt.id))
    const replays = results.filter(({ result }) => result.replayed).length
    console.log(
      `CLIENT orders=${ORDERS} rows=${orders} charges=${charges} attempts=${attempts} reached=${arrived.size} never-reached=${lost.length} ` +
        `drops=${dropped} retries=${retries} replays=${replays}`,
    )
    for (const attempt of lost) console.log(`NEVER-REACHED ${attempt.id}: ${attempt.error ?? attempt.outcome}`)

    expect({ orders, charges, distinctKeys }).toEqual({ orders: ORDERS, charges: ORDERS, distinctKeys: ORDERS })
    // The faults really happened, at about the configured rate.
    expect(dropped).toBeGreaterThan(ORDERS * DROP * 0.8)
    // The client counted exactly the attempts it sent; each reached the server at most once.
    expect(sent).toHaveLength(attempts)
    expect(arrived.size).toBe(seen.length)
    const ids = new Set(sent.map((attempt) => attempt.id))
    expect([...arrived].filter((id) => !ids.has(id ?? ''))).toEqual([])
    // The server answered every attempt it saw, and the proxy dropped that answer or passed it on:
    // no client gave up on one first (abandoned), and exactly one answer per call reached the client.
    expect(forwarded).toBe(seen.length)
    expect({ abandoned, sum: dropped + delivered }).toEqual({ abandoned: 0, sum: forwarded })
    expect(delivered).toBe(ORDERS)
    // An attempt can also fail before the server sees it: a connection reset as the request is
    // sent on it (a kept-alive connection the far side is closing: the client's to the proxy, or
    // the proxy's to the server, which made the proxy answer 502 before it let idle connections
    // go first), or refused. The client got no answer from the server for it, and retried it
    // with the same key as it does a dropped answer.
    for (const attempt of lost) expect(LOST.has(attempt.outcome), `${attempt.id}: ${attempt.outcome}`).toBe(true)
    expect(sent.filter((attempt) => attempt.outcome === 502 || attempt.outcome === 504)).toHaveLength(failed)
    // So each retry answers exactly one lost attempt: a dropped answer, or one that never arrived.
    expect(retries).toBe(dropped + lost.length)
    expect(replays).toBeGreaterThan(0)

    for (const { result, order, body } of results) {
      expect(result.response.status).toBe(201)
      // The original 201: the body names the one order row this key created.
      const rows = await app.orderFor(result.key)
      expect(rows).toEqual([{ id: body.orderId, ...order }])
      expect(body).toEqual({ orderId: body.orderId, ...order })
      expect(result.response.headers.get('location')).toBe(`/orders/${body.orderId}`)
    }
  })

  it('sent the same key on every attempt of a call, and never the same key for two calls', () => {
    expect(results).toHaveLength(ORDERS)
    const arrived = reached()
    const keysByCall = new Map<string, string[]>()
    for (const { call, key } of seen) keysByCall.set(call ?? '?', [...(keysByCall.get(call ?? '?') ?? []), key ?? '(none)'])
    expect(keysByCall.size).toBe(ORDERS)
    results.forEach(({ result }, i) => {
      const attempts = sent.filter((attempt) => attempt.call === String(i))
      expect(attempts.map((attempt) => attempt.id)).toEqual(Array.from({ length: result.attempts }, (_, n) => `${i}#${n + 1}`))
      // Every attempt but the last was lost (its answer dropped, or it never arrived); the last got the 201.
      expect(attempts.at(-1)?.outcome).toBe(201)
      for (const attempt of attempts.slice(0, -1)) expect(LOST.has(attempt.outcome), `${attempt.id}: ${attempt.outcome}`).toBe(true)
      // The server saw the attempts that reached it, each with the call's key and no other.
      const keys = keysByCall.get(String(i)) ?? []
      expect(keys).toHaveLength(attempts.filter((attempt) => arrived.has(attempt.id)).length)
      expect(new Set(keys)).toEqual(new Set([`"${result.key}"`]))
      // The answer is a replay exactly when an earlier attempt reached the server and ran the order.
      expect(result.replayed).toBe(attempts.slice(0, -1).some((attempt) => arrived.has(attempt.id)))
    })
    expect(new Set(results.map(({ result }) => result.key)).size).toBe(ORDERS)
    // Calls that were retried are the interesting ones: several attempts, one key.
    expect(results.some(({ result }) => result.attempts >= 3)).toBe(true)
  })
})
