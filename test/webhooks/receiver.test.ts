// The webhook matrix (issue 35; issue 48, item 4): the receiver with the built-in
// verifiers on every front end (Fetch, Hono, Express 5 and 4, Koa 3 and 2, Fastify,
// NestJS on Express and on Fastify, Lambda behind API Gateway's REST and HTTP APIs, a
// Function URL and an ALB: support/adapters.ts) × every provider (Stripe, GitHub,
// Standard Webhooks under its webhook-* and Svix's svix-* headers, Shopify, Slack), the
// inbox on Postgres, each provider's deliveries signed by its own code
// (support/providers.ts). One test body per cell: a valid delivery is handled once, and
// its repeat and the provider's own redelivery are answered as duplicates; a tampered
// body, a wrong secret and a stale timestamp (with an id never seen) are 401
// problem+json with nothing recorded. Then, on each front end: a body parser mounted
// first still verifies when the raw bytes are kept and fails loudly (500, nothing run)
// when they are not; a body with a BOM and invalid UTF-8 verifies (in base64 on Lambda);
// Slack's url_verification is answered with its challenge, nothing recorded; hostile
// headers and bodies never get a 5xx.
import { createHmac, randomBytes } from 'node:crypto'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEventStream, type IdemEvent } from '../../src/core/events.js'
import { webhookReceiver as onFetch } from '../../src/http/fetch/index.js'
import { createInbox } from '../../src/queue/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { handledOn } from './support/handled.js'
import { adapters, type Mount, type Receivers, type Running } from './support/adapters.js'
import { now, providers, slackSign, type Provider } from './support/providers.js'

const db = await testSchema('idem_webhook_receiver')
/** Every header a verifier reads, for the fuzz test to send hostile values in. */
const HEADERS = ['stripe-signature', 'x-hub-signature-256', 'x-github-delivery', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'svix-id', 'svix-timestamp', 'svix-signature', 'x-shopify-hmac-sha256', 'x-shopify-webhook-id', 'x-shopify-event-id', 'x-slack-signature', 'x-slack-request-timestamp']
afterAll(() => db?.drop())

describe.skipIf(db === undefined)('webhookReceiver with built-in verifiers, on every adapter (inbox on Postgres)', () => {
  const { store, setUp, write, runs, runsOf, recorded } = handledOn(db as TestSchema)
  beforeAll(setUp)

  function receivers(adapter: string, mount: Mount): Receivers {
    return providers.map((provider) => {
      const consumer = `${adapter}-${mount}-${provider.name}-${randomBytes(3).toString('hex')}`
      const inbox = createInbox({ store, consumer })
      const verify = provider.verifier(provider.secret)
      return {
        path: `/webhooks/${provider.name}`,
        consumer,
        options: () => ({
          inbox,
          verify,
          handler: (tx, event) => write(tx, consumer, event.id),
        }),
      }
    })
  }
  const consumerOf = (receivers: Receivers, provider: Provider) => receivers.find(({ path }) => path.endsWith(provider.name))!.consumer

  const post = (base: string, provider: Provider, body: string | Uint8Array, headers: Record<string, string>) =>
    fetch(`${base}/webhooks/${provider.name}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

  async function expectRefused(response: Response, check: string, secret: string): Promise<void> {
    expect(response.status).toBe(401)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
    const text = await response.text()
    const problem = JSON.parse(text) as { code: string; check: string; detail: string }
    expect(problem.code).toBe('invalid-signature')
    expect(problem.check).toBe(check)
    expect(text).not.toContain(secret)
    expect(text).not.toContain(secret.replace(/^whsec_/, ''))
  }

  it('reports each delivery on the event stream: verified and processed, verified and duplicate, refused with its check', async () => {
    const events = createEventStream()
    const seen: IdemEvent[] = []
    events.subscribe((event) => void (event.type === 'webhook' && seen.push(event)))
    const provider = providers[0]!
    const consumer = `events-${randomBytes(3).toString('hex')}`
    const receive = onFetch({ inbox: createInbox({ store, consumer }), verify: provider.verifier(provider.secret), handler: () => {}, events })
    const valid = await provider.delivery()
    const request = (body: string) => new Request('http://localhost/webhooks', { method: 'POST', headers: valid.headers, body })
    await receive(request(valid.body))
    await receive(request(valid.body))
    await receive(request(`${valid.body} `))
    expect(seen).toEqual([
      { type: 'webhook', consumer, scheme: 'stripe', signature: 'verified', status: 'processed' },
      { type: 'webhook', consumer, scheme: 'stripe', signature: 'verified', status: 'duplicate' },
      { type: 'webhook', consumer, scheme: 'stripe', signature: 'refused', status: 'refused', check: 'no-matching-signature' },
    ])
  })

  for (const provider of providers) {
    it(`${provider.name}: while a secret is rotated, deliveries signed with the old or the new one are handled once each, a third secret is 401 and recorded nowhere`, async () => {
      const consumer = `rotation-${provider.name}-${randomBytes(3).toString('hex')}`
      const rotated = provider.verifier([provider.secret, provider.otherSecret])
      const receive = onFetch({ inbox: createInbox({ store, consumer }), verify: rotated, handler: (tx, event) => write(tx, consumer, event.id) })
      const request = ({ body, headers }: { body: string; headers: Record<string, string> }) => new Request('http://localhost/webhooks', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
      const byOld = await provider.delivery({ secret: provider.secret })
      const byNew = await provider.delivery({ secret: provider.otherSecret })
      for (const delivery of [byOld, byNew, byOld, byNew]) expect((await receive(request(delivery))).status).toBe(200)
      expect(await runsOf(consumer, byOld.id)).toBe(1)
      expect(await runsOf(consumer, byNew.id)).toBe(1)
      const byThird = await provider.delivery({ secret: provider.newSecret() })
      const refusedResponse = await receive(request(byThird))
      expect(refusedResponse.status).toBe(401)
      expect(await runsOf(consumer, byThird.id)).toBe(0)
      expect(await recorded(consumer)).toBe(2)
    })
  }

  for (const adapter of adapters) {
    describe(adapter.name, () => {
      let server: Running
      let mounted: Receivers
      beforeAll(async () => {
        mounted = receivers(adapter.name, 'alone')
        server = await adapter.start(mounted, 'alone')
        return () => server.close()
      })

      for (const provider of providers) {
        it(`${provider.name}: a valid delivery is handled once, its repeat and the provider's redelivery answered as duplicates; tampered, wrong-secret and stale ones are 401 and recorded nowhere`, async () => {
          const consumer = consumerOf(mounted, provider)
          const valid = await provider.delivery()
          const first = await post(server.base, provider, valid.body, valid.headers)
          expect(first.status).toBe(200)
          expect(await first.json()).toEqual({ received: true, id: valid.id })
          // The same bytes again (a retry after a lost answer), then the event as the provider sends it again (signed anew, another webhook's copy).
          for (const headers of [valid.headers, await provider.again(valid)]) {
            const again = await post(server.base, provider, valid.body, headers)
            expect(again.status).toBe(200)
            expect(again.headers.get('idempotent-replayed')).toBe('true')
            expect(await again.json()).toEqual({ received: true, id: valid.id, duplicate: true })
          }
          expect(await runsOf(consumer, valid.id)).toBe(1)
          const before = await recorded(consumer)

          const tampered = await provider.delivery()
          await expectRefused(await post(server.base, provider, tampered.body.replace('"', '"x'), tampered.headers), 'no-matching-signature', provider.secret)
          const forged = await provider.delivery({ secret: provider.otherSecret })
          await expectRefused(await post(server.base, provider, forged.body, forged.headers), 'no-matching-signature', provider.secret)
          if (provider.signsTimestamp) {
            // A new event id, validly signed ten minutes ago: a replay the inbox has never seen.
            const stale = await provider.delivery({ timestamp: now() - 600 })
            await expectRefused(await post(server.base, provider, stale.body, stale.headers), 'stale-timestamp', provider.secret)
            expect(await runsOf(consumer, stale.id)).toBe(0)
            const future = await provider.delivery({ timestamp: now() + 600 })
            await expectRefused(await post(server.base, provider, future.body, future.headers), 'future-timestamp', provider.secret)
            expect(await runsOf(consumer, future.id)).toBe(0)
          }
          // The signature header cut short, as a proxy that truncates long headers would.
          const cut = await provider.delivery()
          const value = cut.headers[provider.signatureHeader]!
          const truncated = await post(server.base, provider, cut.body, { ...cut.headers, [provider.signatureHeader]: value.slice(0, Math.floor(value.length / 2)) })
          expect(truncated.status).toBe(401)
          expect(await runsOf(consumer, cut.id)).toBe(0)
          expect(await recorded(consumer)).toBe(before)
          expect(await runsOf(consumer, tampered.id)).toBe(0)
          expect(await runsOf(consumer, forged.id)).toBe(0)
        })
      }

      it('verifies the bytes as they arrived: a body with a BOM and invalid UTF-8 (Standard Webhooks)', async () => {
        const provider = providers.find(({ name }) => name === 'standard-webhooks')!
        const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"note":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')])
        const id = `msg_${randomBytes(12).toString('hex')}`
        const timestamp = now()
        // The library signs text; latin1 text maps each byte to one code unit, which it
        // encodes as UTF-8, so the HMAC is computed here over the same bytes instead.
        const key = Buffer.from(provider.secret.slice('whsec_'.length), 'base64')
        const signature = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(bytes).digest('base64')
        const response = await post(server.base, provider, bytes, { 'content-type': 'text/plain', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` })
        expect(response.status).toBe(200)
        expect(await runsOf(consumerOf(mounted, provider), id)).toBe(1)
      })

      it("answers Slack's signed url_verification with its challenge (so Slack saves the Request URL), recording and running nothing", async () => {
        const provider = providers.find(({ name }) => name === 'slack')!
        const consumer = consumerOf(mounted, provider)
        const before = await recorded(consumer)
        const challenge = randomBytes(24).toString('base64url')
        // What Slack sends when the Request URL is saved: no event, no event_id.
        const body = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge, type: 'url_verification' })
        const timestamp = now()
        const response = await post(server.base, provider, body, { 'x-slack-signature': slackSign(provider.secret, timestamp, body), 'x-slack-request-timestamp': String(timestamp) })
        expect(response.status).toBe(200)
        expect(response.headers.get('content-type')).toMatch(/^application\/json/)
        expect(await response.json()).toEqual({ challenge })
        expect(await recorded(consumer)).toBe(before)
        expect(await runs(consumer)).toHaveLength(await recorded(consumer))
      })

      it('never answers 5xx nor runs the handler for hostile signature headers and bodies (fuzz)', async () => {
        const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 200 })
        const field = fc.oneof(printable, fc.constantFrom('', 't=', 'v1=', 'sha256=', 'v1,', 'v0=', 'whsec_', 't=1,v1=' + 'a'.repeat(64), `t=${now()},v1=${'0'.repeat(64)}`, 'v1,' + 'A'.repeat(43) + '=', 'A'.repeat(43) + '=', `v0=${'0'.repeat(64)}`, String(now())))
        const consumers = providers.map((provider) => consumerOf(mounted, provider))
        const before = await Promise.all(consumers.map(recorded))
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...providers),
            fc.dictionary(fc.constantFrom(...HEADERS), field),
            fc.oneof(printable, fc.uint8Array({ maxLength: 300 })),
            async (provider, headers, body) => {
              const response = await post(server.base, provider, body, headers)
              await response.arrayBuffer()
              // 401 from the receiver, or 4xx from a framework that refuses the body before it (415, a JSON parse error).
              expect(response.status).toBeGreaterThanOrEqual(400)
              expect(response.status).toBeLessThan(500)
            },
          ),
          { numRuns: 40 },
        )
        expect(await Promise.all(consumers.map(recorded))).toEqual(before)
      })

      for (const mount of adapter.mounts) {
        it(mount === 'parser-keeps-bytes' ? 'a body parser mounted first that keeps the raw bytes: still verifies, once' : 'a body parser mounted first that drops the raw bytes: fails loudly (500 naming the fix), runs nothing', async () => {
          const after = receivers(adapter.name, mount)
          const running = await adapter.start(after, mount)
          try {
            for (const provider of providers) {
              const consumer = consumerOf(after, provider)
              const valid = await provider.delivery()
              const response = await post(running.base, provider, valid.body, valid.headers)
              if (mount === 'parser-keeps-bytes') {
                expect(response.status).toBe(200)
                expect((await post(running.base, provider, valid.body, valid.headers)).headers.get('idempotent-replayed')).toBe('true')
                expect(await runsOf(consumer, valid.id)).toBe(1)
              } else {
                expect(response.status).toBe(500)
                // Nest's exception filter hides the message; the others show what to do.
                if (!adapter.name.startsWith('NestJS')) expect(await response.text()).toMatch(/raw bytes were not kept/)
                expect(await runsOf(consumer, valid.id)).toBe(0)
                expect(await recorded(consumer)).toBe(0)
              }
            }
          } finally {
            await running.close()
          }
        })
      }
    })
  }
})
