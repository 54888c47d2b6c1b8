import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { idempotency } from '../../src/http/fetch/index.js'
import { createLeasedIdem, type StepContext } from '../../src/index.js'
import { memoryLeasedStore } from '../../src/stores/memory/index.js'
import { redisStore } from '../../src/stores/redis/index.js'

// The middleware calls only `run`, which the leased engine shares with the transactional
// one: the leased engine is passed as it is, and the route's `idem.tx` is typed as the
// step context (tsc checks this file).
const order = (key: string, body = '{"amount":1000}') =>
  new Request('http://shop.test/orders', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body })

describe('the HTTP middleware on the leased engine (wiring only)', () => {
  const clients: Redis[] = []
  afterAll(() => clients.forEach((c) => c.disconnect()))

  it('runs the route once with the step context as `tx`, replays, and answers 422 to another body', async () => {
    const protect = idempotency({ idem: createLeasedIdem({ store: memoryLeasedStore() }), scope: () => 'acct' })
    let charges = 0
    const route = async (_: Request, idem: { tx: StepContext } | undefined) => {
      const charge = await idem!.tx.step('charge', async () => ({ id: `ch_${++charges}` }))
      return Response.json(charge, { status: 201 })
    }
    const first = await protect(order('k1'), route)
    expect(first.status).toBe(201)
    expect(await first.json()).toEqual({ id: 'ch_1' })
    const again = await protect(order('k1'), route)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await again.json()).toEqual({ id: 'ch_1' })
    expect((await protect(order('k1', '{"amount":5}'), route)).status).toBe(422)
    expect(charges).toBe(1)
  })

  it('Redis down: 503 with Retry-After within the store timeout, and the route never runs', async () => {
    const client = new Redis(1, '127.0.0.1', { lazyConnect: true })
    client.on('error', () => {})
    clients.push(client)
    const protect = idempotency({ idem: createLeasedIdem({ store: redisStore({ client, timeoutMs: 200 }) }), scope: () => 'acct' })
    let ran = false
    const answer = await protect(order('k-down'), async () => {
      ran = true
      return new Response('ok')
    })
    expect(answer.status).toBe(503)
    expect(answer.headers.get('retry-after')).toBe('1')
    expect(((await answer.json()) as { code: string }).code).toBe('store-unavailable')
    expect(ran).toBe(false)
  })
})
