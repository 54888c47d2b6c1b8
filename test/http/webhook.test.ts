import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { webhookReceiver } from '../../src/http/fetch/index.js'
import { createInbox } from '../../src/queue/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { unique } from '../queue/support.js'

const db = await testSchema('idem_q_webhook')
afterAll(() => db?.drop())

const post = (body: string, headers: Record<string, string> = {}) =>
  new Request('http://localhost/webhooks', { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } })

describe.skipIf(db === undefined)('webhook receiver (Request → Response) on Postgres', () => {
  const { pool, schema } = db as TestSchema
  const store = postgresStore({ pool, schema })
  const events = `"${schema}".payments`
  beforeAll(async () => {
    await store.migrate()
    await pool.query(`CREATE TABLE ${events} (event_id text NOT NULL, kind text NOT NULL)`)
  })
  const rows = async (id: string) => (await pool.query(`SELECT count(*)::int AS n FROM ${events} WHERE event_id = $1`, [id])).rows[0].n as number

  it("Stripe: records the evt_ id with the handler's writes; a retry answers 200 at once without running the handler", async () => {
    let runs = 0
    const receive = webhookReceiver<PgClient>({
      inbox: createInbox({ store, consumer: unique('stripe') }),
      eventId: 'stripe',
      handler: async (tx, event) => {
        runs++
        const body = event.body as { id: string; type: string }
        await tx.query(`INSERT INTO ${events} (event_id, kind) VALUES ($1, $2)`, [body.id, body.type])
      },
    })
    const id = unique('evt')
    const body = JSON.stringify({ id, object: 'event', type: 'payment_intent.succeeded' })
    const first = await receive(post(body))
    expect(first.status).toBe(200)
    expect(await first.json()).toEqual({ received: true, id })
    const retry = await receive(post(body))
    expect(retry.status).toBe(200)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(runs).toBe(1)
    expect(await rows(id)).toBe(1)
  })

  it('GitHub: dedupes by X-GitHub-Delivery; a failing handler answers 500 with nothing recorded, and the redelivery runs it', async () => {
    let fail = true
    const receive = webhookReceiver<PgClient>({
      inbox: createInbox({ store, consumer: unique('github') }),
      eventId: 'github',
      handler: async (tx, event) => {
        await tx.query(`INSERT INTO ${events} (event_id, kind) VALUES ($1, $2)`, [event.id, event.request.headers.get('x-github-event')])
        if (fail) throw new Error('CI service is down')
      },
    })
    const delivery = unique('72d3162e-cc78-11e3-81ab-4c9367dc0958')
    const headers = { 'x-github-delivery': delivery, 'x-github-event': 'push' }
    const failed = await receive(post('{"ref":"refs/heads/main"}', headers))
    expect(failed.status).toBe(500)
    expect(failed.headers.get('content-type')).toBe('application/problem+json')
    expect(await rows(delivery)).toBe(0)
    fail = false
    expect((await receive(post('{"ref":"refs/heads/main"}', headers))).status).toBe(200)
    const again = await receive(post('{"ref":"refs/heads/main"}', headers))
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await rows(delivery)).toBe(1)
  })

  it('a user function picks the id (Slack event_id here); signature check, method and missing ids are refused', async () => {
    let runs = 0
    const receive = webhookReceiver<PgClient>({
      inbox: createInbox({ store, consumer: unique('slack') }),
      eventId: (_request, body) => (JSON.parse(new TextDecoder().decode(body)) as { event_id?: string }).event_id,
      verify: (request) => request.headers.get('x-signature') === 'good',
      handler: () => void runs++,
    })
    const body = JSON.stringify({ event_id: unique('Ev08'), type: 'event_callback' })
    expect((await receive(post(body, { 'x-signature': 'bad' }))).status).toBe(401)
    expect((await receive(new Request('http://localhost/webhooks'))).status).toBe(405)
    expect((await receive(post('{"type":"url_verification"}', { 'x-signature': 'good' }))).status).toBe(400)
    expect((await receive(post(body, { 'x-signature': 'good' }))).status).toBe(200)
    expect((await receive(post(body, { 'x-signature': 'good' }))).status).toBe(200)
    expect(runs).toBe(1)
    const stripe = webhookReceiver({ inbox: createInbox({ store, consumer: unique('s') }), eventId: 'stripe', handler: () => {} })
    const missing = await stripe(post('{"id":"pi_123"}'))
    expect(missing.status).toBe(400)
    expect(((await missing.json()) as { detail: string }).detail).toMatch(/evt_/)
  })

  it('refuses a body past maxBodyBytes with 413 as it streams in, without Content-Length, and runs nothing', async () => {
    let runs = 0
    const receive = webhookReceiver<PgClient>({
      inbox: createInbox({ store, consumer: unique('limit') }),
      eventId: 'stripe',
      maxBodyBytes: 1024,
      handler: async () => void runs++,
    })
    // 64 KiB chunks for as long as they are pulled: the receiver must stop early.
    let pulled = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 65_536
        controller.enqueue(new Uint8Array(65_536).fill(32))
        if (pulled >= 64 * 65_536) controller.close()
      },
    })
    const request = new Request('http://localhost/webhooks', { method: 'POST', body: endless, duplex: 'half', headers: { 'content-type': 'application/json' } } as RequestInit)
    const answer = await receive(request)
    expect(answer.status).toBe(413)
    expect(answer.headers.get('content-type')).toBe('application/problem+json')
    expect(pulled).toBeLessThanOrEqual(3 * 65_536)
    expect(runs).toBe(0)
    expect((await receive(post(JSON.stringify({ id: unique('evt'), pad: 'x'.repeat(2_000) })))).status).toBe(413)
  })

  it('validates its options at creation', () => {
    const inbox = createInbox({ store, consumer: 'x' })
    expect(() => webhookReceiver({ inbox, eventId: 'slack' as never, handler: () => {} })).toThrow(/"eventId"/)
    expect(() => webhookReceiver({ inbox, eventId: 'stripe', handler: undefined as never })).toThrow(/"handler"/)
    expect(() => webhookReceiver({ inbox, handler: () => {} })).toThrow(/"eventId" is required unless "verify" is a verifier/)
    expect(() => webhookReceiver({ inbox, eventId: 'stripe', verify: { scheme: 'x' } as never, handler: () => {} })).toThrow(/"verify"/)
  })
})
