// docs/nestjs.md shows examples/nestjs/first.ts and examples/nestjs/orders.ts whole; this
// runs them: one order per key, the retry replayed, another body with the same key
// refused, and (orders.ts) a missing API key refused by the guard before idem runs.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { INestApplication } from '@nestjs/common'
import type { AddressInfo } from 'node:net'
import type pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { PG_URL, testSchema } from '../support/postgres.js'
import { httpCall } from './support/frontends.js'

const root = new URL('../..', import.meta.url).pathname
const db = await testSchema('idem_nest_guide')

describe('docs/nestjs.md: the first app (memory store, one route)', () => {
  let app: INestApplication | undefined
  afterAll(async () => {
    await app?.close()
  })

  it('shows examples/nestjs/first.ts verbatim', () => {
    const guide = readFileSync(join(root, 'docs/nestjs.md'), 'utf8')
    const source = readFileSync(join(root, 'examples/nestjs/first.ts'), 'utf8').trim()
    expect(guide.includes(source), 'docs/nestjs.md must show examples/nestjs/first.ts verbatim').toBe(true)
  })

  it('runs as shown: the order once, the retry replayed, a changed body 422', async () => {
    const { createApp } = await import('../../examples/nestjs/first.js')
    app = await createApp()
    app.useLogger(false)
    await app.listen(0, '127.0.0.1')
    const { port } = (app.getHttpServer() as { address(): AddressInfo }).address()
    const order = { path: '/orders', key: '"order-1"', tenant: undefined, contentType: 'application/json', body: '{"amount":1500}' }
    const first = await httpCall(port, order)
    expect(first.status).toBe(201)
    expect(await first.json()).toEqual({ orderId: 1, amount: 1500 })
    const retry = await httpCall(port, order)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(await retry.json()).toEqual({ orderId: 1, amount: 1500 })
    expect((await httpCall(port, { ...order, body: '{"amount":700}' })).status).toBe(422)
    expect(await (await httpCall(port, { ...order, key: '"order-2"' })).json()).toEqual({ orderId: 2, amount: 1500 })
  })
})

describe.skipIf(db === undefined)('docs/nestjs.md: the guide', () => {
  let app: INestApplication | undefined
  let pool: pg.Pool | undefined
  afterAll(async () => {
    await app?.close()
    await pool?.end()
    await db?.drop()
  })

  it('shows examples/nestjs/orders.ts verbatim', () => {
    const guide = readFileSync(join(root, 'docs/nestjs.md'), 'utf8')
    const source = readFileSync(join(root, 'examples/nestjs/orders.ts'), 'utf8').trim()
    expect(guide.includes(source), 'docs/nestjs.md must show examples/nestjs/orders.ts verbatim').toBe(true)
  })

  it('runs as shown: the order is written once, the retry replays, a changed body is 422, no API key is 403', async () => {
    process.env.DATABASE_URL = PG_URL
    process.env.IDEM_SCHEMA = db!.schema
    const { createApp } = await import('../../examples/nestjs/orders.js')
    ;({ app, pool } = await createApp())
    app.useLogger(false)
    await app.listen(0, '127.0.0.1')
    const { port } = (app.getHttpServer() as { address(): AddressInfo }).address()
    const order = { path: '/orders', key: '"order-1"', tenant: undefined, contentType: 'application/json', body: '{"amount":1500}' }
    const send = (call: typeof order, apiKey: string | null = 'k1') => httpCall(port, call, apiKey === null ? {} : { 'x-api-key': apiKey })

    const first = await send(order)
    expect(first.status).toBe(201)
    expect(await first.json()).toEqual({ orderId: 1, amount: 1500 })
    const retry = await send({ ...order, body: '{ "amount": 1500 }' })
    expect(retry.status).toBe(201)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(await retry.json()).toEqual({ orderId: 1, amount: 1500 })
    expect((await send({ ...order, body: '{"amount":700}' })).status).toBe(422)
    // Another account's key of the same name is another key.
    expect(await (await send(order, 'k2')).json()).toEqual({ orderId: 2, amount: 1500 })
    expect((await send({ ...order, key: '"order-3"' }, null)).status).toBe(403)
    const { rows } = await db!.pool.query(`SELECT count(*)::int AS n FROM "${db!.schema}".orders`)
    expect(rows[0].n).toBe(2)
  })
})
