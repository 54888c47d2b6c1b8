// The client's retry case (test/client/orders.test.ts), smaller, on the runtime's own HTTP
// server and fetch: orders go to a Hono app behind `idem/hono` on Postgres; a seeded 30%
// of the responses are lost after the server committed (the attempt fails as a dropped
// connection does), and the client retries with the same key until it gets its answer.
import { Hono } from 'hono'
import { expect } from 'vitest'
import { createClient, type FetchResult } from 'idem/client'
import { idempotency, type IdemVariables } from 'idem/hono'
import { postgresStore, type PgClient } from 'idem/postgres'
import { seededRandom } from 'idem/testing'
import { testSchema } from '../../support/postgres.js'
import type { SliceGroup } from './main.js'
import { SLICE_GROUPS } from './plan.js'

const ORDERS = 200
const CONCURRENCY = 10
const DROP = 0.3

interface Listening {
  url: string
  close(): Promise<void>
}

// The runtimes' own servers, typed by the little used here (Node 20's types know neither).
interface RuntimeGlobals {
  Bun?: { serve(options: { hostname: string; port: number; fetch(request: Request): Promise<Response> }): { port: number; stop(closeActive?: boolean): unknown } }
  Deno?: {
    serve(options: { hostname: string; port: number; onListen?(): void }, handler: (request: Request) => Promise<Response>): { addr: { port: number }; shutdown(): Promise<void> }
  }
}

/** Serves `fetch` on loopback with `Bun.serve` or `Deno.serve`. */
function serveOnRuntime(fetch: (request: Request) => Promise<Response>): Listening {
  const { Bun, Deno } = globalThis as RuntimeGlobals
  if (Bun !== undefined) {
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch })
    return { url: `http://127.0.0.1:${server.port}`, close: async () => void (await server.stop(true)) }
  }
  if (Deno !== undefined) {
    const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen() {} }, fetch)
    return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() }
  }
  throw new Error('the client case runs on Bun or Deno, with their own HTTP server')
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` running at once. */
async function pooled<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++
      results[i] = await task(i)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return results
}

export const clientGroup: SliceGroup = {
  name: SLICE_GROUPS.find((name) => name.startsWith('client: '))!,
  async open() {
    const db = await testSchema('idem_runtime_client', CONCURRENCY)
    if (db === undefined) return { skipped: 'Postgres is unreachable' }
    const { pool, schema } = db
    const store = postgresStore({ pool, schema })
    await store.migrate()
    await pool.query(`
      CREATE TABLE "${schema}".orders (id bigserial PRIMARY KEY, idem_key text NOT NULL, customer text NOT NULL, amount int NOT NULL);
      CREATE TABLE "${schema}".charges (id bigserial PRIMARY KEY, order_id bigint NOT NULL, amount int NOT NULL);
    `)
    const app = new Hono<{ Variables: IdemVariables<PgClient> }>()
    app.use('/orders', idempotency<PgClient>({ store, scope: (c) => c.req.header('x-account') ?? 'anonymous' }))
    app.post('/orders', async (c) => {
      const { tx, key } = c.get('idem')!
      const { customer, amount } = await c.req.json<{ customer: string; amount: number }>()
      // No unique constraint: a route that ran twice would leave a second row.
      const { rows } = await tx.query(`INSERT INTO "${schema}".orders (idem_key, customer, amount) VALUES ($1, $2, $3) RETURNING id`, [key, customer, amount])
      const orderId = Number((rows[0] as { id: string }).id)
      await tx.query(`INSERT INTO "${schema}".charges (order_id, amount) VALUES ($1, $2)`, [orderId, amount])
      return c.json({ orderId, customer, amount }, 201, { location: `/orders/${orderId}` })
    })
    const server = serveOnRuntime(async (request) => app.fetch(request))
    return {
      cases: [
        {
          name: `${ORDERS} orders, ${DROP * 100}% of the responses lost after the commit: each order and charge once, every call gets the original 201`,
          async run() {
            const drop = seededRandom(2026)
            let dropped = 0
            // The runtime's own fetch; a lost response is an attempt that fails after the server answered.
            const lossyFetch = async (request: Request): Promise<Response> => {
              const response = await fetch(request)
              if (drop() >= DROP) return response
              await response.arrayBuffer()
              dropped++
              throw new TypeError('fetch failed: the connection was lost before the response arrived')
            }
            let retries = 0
            const client = createClient({
              fetch: lossyFetch,
              backoff: { baseMs: 5, maxMs: 50 },
              maxAttempts: 12,
              deadlineMs: 30_000,
              random: seededRandom(7),
              onRetry: () => retries++,
            })
            const results: Array<{ result: FetchResult; body: { orderId: number; customer: string; amount: number } }> = await pooled(ORDERS, CONCURRENCY, async (i) => {
              const result = await client.fetch(`${server.url}/orders`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', 'x-account': 'acct-1' },
                body: JSON.stringify({ customer: `customer-${i % 37}`, amount: 100 + i }),
              })
              return { result, body: (await result.response.json()) as { orderId: number; customer: string; amount: number } }
            })
            const { rows } = await pool.query(`
              SELECT (SELECT count(*)::int FROM "${schema}".orders) AS orders,
                     (SELECT count(*)::int FROM "${schema}".charges) AS charges,
                     (SELECT count(DISTINCT idem_key)::int FROM "${schema}".orders) AS "distinctKeys"`)
            expect(rows[0]).toEqual({ orders: ORDERS, charges: ORDERS, distinctKeys: ORDERS })
            expect(dropped).toBeGreaterThan(ORDERS * DROP * 0.6)
            expect(retries).toBe(dropped)
            const replays = results.filter(({ result }) => result.replayed)
            expect(replays.length).toBe(results.filter(({ result }) => result.attempts > 1).length)
            expect(replays.length).toBeGreaterThan(0)
            expect(new Set(results.map(({ result }) => result.key)).size).toBe(ORDERS)
            results.forEach(({ result, body }, i) => {
              expect(result.response.status).toBe(201)
              expect(body).toEqual({ orderId: body.orderId, customer: `customer-${i % 37}`, amount: 100 + i })
              expect(result.response.headers.get('location')).toBe(`/orders/${body.orderId}`)
            })
            const { rows: keyed } = await pool.query(`SELECT idem_key, id::int FROM "${schema}".orders`)
            const orderOf = new Map(keyed.map((row: { idem_key: string; id: number }) => [row.idem_key, row.id]))
            for (const { result, body } of results) expect(orderOf.get(result.key)).toBe(body.orderId)
          },
        },
      ],
      async close() {
        await server.close()
        await db.drop()
      },
    }
  },
}
