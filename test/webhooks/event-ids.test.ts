// What the receiver records as one event (issue 44, item 5), through the public
// `webhookReceiver` with the inbox on Postgres: each provider's event sent again as the
// provider sends it again (a retry signed anew, another webhook's or subscription's
// copy) runs the handler once, Shopify's two subscriptions to one topic included; and,
// for the schemes that sign neither id nor time (GitHub, Shopify), a captured delivery
// resent under a fresh id runs again unless `eventId: 'body-digest'` records the signed
// body's digest instead.
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { sign as githubSign } from '@octokit/webhooks-methods'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { webhookReceiver } from '../../src/http/fetch/index.js'
import type { WebhookEventId } from '../../src/http/webhooks/receiver.js'
import { githubSignature, shopifySignature } from '../../src/http/webhooks/index.js'
import { createInbox } from '../../src/queue/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { handledOn } from './support/handled.js'
import { providers, shopifySign } from './support/providers.js'

const db = await testSchema('idem_webhook_event_ids')
afterAll(() => db?.drop())

const request = (body: string, headers: Record<string, string>) =>
  new Request('http://localhost/webhooks', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

describe.skipIf(db === undefined)('one event, one handler run (inbox on Postgres)', () => {
  const { store, setUp, write, runs } = handledOn(db as TestSchema)
  beforeAll(setUp)

  function receiver(name: string, options: { verify: Parameters<typeof webhookReceiver>[0]['verify']; eventId?: WebhookEventId }) {
    const consumer = `${name}-${randomBytes(3).toString('hex')}`
    const receive = webhookReceiver({
      inbox: createInbox({ store, consumer }),
      ...options,
      handler: (tx, event) => write(tx, consumer, event.id),
    })
    return { consumer, receive }
  }

  for (const provider of providers) {
    it(`${provider.name}: the event sent again as ${provider.name} sends it again is a duplicate; the handler ran once`, async () => {
      const { consumer, receive } = receiver(`again-${provider.name}`, { verify: provider.verifier(provider.secret) })
      const first = await provider.delivery()
      const again = await provider.again(first)
      expect(again).not.toEqual(first.headers)
      expect((await receive(request(first.body, first.headers))).status).toBe(200)
      const repeat = await receive(request(first.body, again))
      expect(repeat.status).toBe(200)
      expect(await repeat.json()).toEqual({ received: true, id: first.id, duplicate: true })
      expect(await runs(consumer)).toEqual([first.id])
    })
  }

  it('Shopify: one event delivered to two subscriptions of its topic (one X-Shopify-Event-Id, two X-Shopify-Webhook-Ids) runs the handler once', async () => {
    const secret = `shpss_${randomBytes(16).toString('hex')}`
    const { consumer, receive } = receiver('shopify-subscriptions', { verify: shopifySignature({ secret }) })
    const body = JSON.stringify({ id: 820982911946154500, email: 'jon@example.com', total_price: '199.00' })
    const eventId = randomUUID()
    const subscription = (webhookId: string) => ({ 'x-shopify-hmac-sha256': shopifySign(secret, body), 'x-shopify-topic': 'orders/create', 'x-shopify-webhook-id': webhookId, 'x-shopify-event-id': eventId })
    const answers = [await receive(request(body, subscription(randomUUID()))), await receive(request(body, subscription(randomUUID())))]
    expect(answers.map((answer) => [answer.status, answer.headers.get('idempotent-replayed')])).toEqual([[200, null], [200, 'true']])
    expect(await runs(consumer)).toEqual([eventId])
  })

  /** GitHub's and Shopify's signed bodies, and their delivery under a given (unsigned) id. */
  const unsignedIds = [
    {
      name: 'GitHub',
      verify: (secret: string) => githubSignature({ secret }),
      secret: randomBytes(20).toString('hex'),
      headers: async (secret: string, body: string, id: string) => ({ 'x-hub-signature-256': await githubSign(secret, body), 'x-github-delivery': id, 'x-github-event': 'push' }),
    },
    {
      name: 'Shopify',
      verify: (secret: string) => shopifySignature({ secret }),
      secret: `shpss_${randomBytes(16).toString('hex')}`,
      headers: async (secret: string, body: string, id: string) => ({ 'x-shopify-hmac-sha256': shopifySign(secret, body), 'x-shopify-webhook-id': id, 'x-shopify-event-id': id }),
    },
  ]
  for (const scheme of unsignedIds) {
    it(`${scheme.name}: a captured delivery resent under a fresh id runs again by default, and is a duplicate with eventId 'body-digest'`, async () => {
      const body = JSON.stringify({ ref: 'refs/heads/main', after: randomBytes(20).toString('hex') })
      const captured = await scheme.headers(scheme.secret, body, randomUUID())
      const resent = { ...captured, ...(await scheme.headers(scheme.secret, body, randomUUID())) }
      const byId = receiver(`${scheme.name}-by-id`, { verify: scheme.verify(scheme.secret) })
      for (const headers of [captured, resent]) expect((await byId.receive(request(body, headers))).status).toBe(200)
      expect(await runs(byId.consumer)).toHaveLength(2)

      const byDigest = receiver(`${scheme.name}-by-digest`, { verify: scheme.verify(scheme.secret), eventId: 'body-digest' })
      const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`
      const answers = [await byDigest.receive(request(body, captured)), await byDigest.receive(request(body, resent))]
      expect(await Promise.all(answers.map((answer) => answer.json()))).toEqual([{ received: true, id: digest }, { received: true, id: digest, duplicate: true }])
      expect(await runs(byDigest.consumer)).toEqual([digest])
      // The signature is still checked first: a changed body is refused, not recorded under its own digest.
      expect((await byDigest.receive(request(`${body} `, captured))).status).toBe(401)
      expect(await runs(byDigest.consumer)).toEqual([digest])
    })
  }
})
