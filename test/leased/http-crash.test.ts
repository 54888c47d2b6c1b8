// A holder SIGKILLed after its route's INSERT, with the leased engine's default lease:
// the retry gets 409 while the dead holder's lease lasts, then takes over and runs the
// route again. With the effect written as docs/leased.md prescribes (keyed by the call's
// derived key, ON CONFLICT DO NOTHING) the order exists once; a plain INSERT shows why
// the pattern is needed.
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLeasedIdem, DEFAULT_LEASE_MS, type StepContext } from '../../src/index.js'
import { idempotency } from '../../src/http/adapters/hono/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
// @ts-expect-error -- a plain ESM fixture shared with the crashing process
import { writeOrder } from '../fixtures/http-leased-order.mjs'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { REDIS_URL, startFixture, testRedis, type TestRedis } from './support.js'

const db = await testSchema('idem_http_leased_crash')
const redis = await testRedis('http-crash')

describe.skipIf(db === undefined || redis === undefined)('an order API on Redis, its holder SIGKILLed after the INSERT', () => {
  const { pool, schema } = db as TestSchema
  const { client, prefix } = redis as TestRedis
  beforeAll(async () => {
    await pool.query(`CREATE TABLE "${schema}".orders (id bigserial PRIMARY KEY, idem_key text UNIQUE, amount integer NOT NULL)`)
  })
  afterAll(async () => {
    await redis?.drop()
    await db?.drop()
  })

  it('the default lease is at most 5 s, so a dead holder blocks its key for no longer', () => {
    expect(DEFAULT_LEASE_MS).toBeLessThanOrEqual(5_000)
  })

  for (const effect of ['upsert', 'insert'] as const) {
    it(`${effect === 'upsert' ? 'the prescribed upsert by derived key: one order' : 'a plain INSERT: the takeover writes a second order'}`, async () => {
      const key = `order-${effect}-${Date.now()}`
      const holder = startFixture('http-leased-crash.mjs', { redisUrl: REDIS_URL, prefix, pgUrl: PG_URL, schema, effect })
      const port = await holder.line('PORT')
      const post = (app: { fetch: (request: Request) => Response | Promise<Response> } | undefined) => {
        const request = new Request(`http://127.0.0.1:${port}/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': `"${key}"` },
          body: JSON.stringify({ amount: 1500 }),
        })
        return app === undefined ? fetch(request).catch(() => undefined) : app.fetch(request)
      }
      void post(undefined)
      await holder.line('WROTE')
      holder.child.kill('SIGKILL')
      expect(await holder.exited).toBe('SIGKILL')

      // The client's retry reaches another instance: same store, default lease.
      const idem = createLeasedIdem({ store: redisStore({ client, prefix }) })
      const app = new Hono<{ Variables: { idem: { tx: StepContext } } }>()
      app.use('/orders', idempotency({ idem, scope: () => 'acct_1' }))
      app.post('/orders', async (c) => c.json(await writeOrder(pool, { schema, effect }, c.get('idem').tx, await c.req.json()), 201))

      const statuses: number[] = []
      for (let attempt = 0; attempt < 100; attempt++) {
        const answer = await post(app)
        statuses.push(answer!.status)
        if (answer!.status !== 409) break
        expect(answer!.headers.get('retry-after')).toBe('1')
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
      expect(statuses.at(-1)).toBe(201)
      expect(statuses.slice(0, -1).every((status) => status === 409)).toBe(true)
      const condition = effect === 'upsert' ? 'idem_key IS NOT NULL' : 'idem_key IS NULL'
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".orders WHERE ${condition}`)
      expect(rows[0].n).toBe(effect === 'upsert' ? 1 : 2)
      // Once stored, every retry is the same answer.
      const replay = await post(app)
      expect(replay!.headers.get('idempotent-replayed')).toBe('true')
    })
  }
})
