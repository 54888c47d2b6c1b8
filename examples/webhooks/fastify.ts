// A Stripe webhook endpoint on Fastify 5. Fastify parses every body before the route, so
// the webhook routes go in a plugin of their own whose parser keeps the bytes; the app's
// other routes keep parsing JSON. Then three deliveries signed by Stripe's SDK: an event,
// Stripe's retry of it (signed anew a minute later), and one whose body was changed.
// node --experimental-strip-types examples/webhooks/fastify.ts
import fastify from 'fastify'
import type { AddressInfo } from 'node:net'
import Stripe from 'stripe'
import { webhookReceiver } from 'idem/fastify'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { stripeSignature } from 'idem/webhooks'

const secret = process.env.STRIPE_WEBHOOK_SECRET ?? 'whsec_test_5a1e0c0ffee'
const handled: string[] = []

/** The part of Stripe's event JSON this app reads (Stripe.Event has it all). */
interface StripeEvent {
  type: string
}

const app = fastify()
await app.register(async (webhooks) => {
  webhooks.removeAllContentTypeParsers() // in this plugin only: its routes get the raw bytes
  webhooks.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
  webhooks.post(
    '/webhooks/stripe',
    webhookReceiver<unknown, StripeEvent>({
      inbox: createInbox({ store: memoryStore(), consumer: 'stripe-webhooks' }), // records each event id once
      verify: stripeSignature({ secret }), // on the raw bytes; also gives the event id (evt_…)
      handler: async (tx, event) => void handled.push(`${event.id} ${event.body?.type}`), // your writes, through tx
    }),
  )
})

// Trying it: the app on a free port, sent what `stripe listen` forwards.
await app.listen({ port: 0, host: '127.0.0.1' })
const { port } = app.server.address() as AddressInfo
const stripe = new Stripe('sk_test_unused')
const payload = JSON.stringify({ id: 'evt_3PtQ1', object: 'event', type: 'payment_intent.succeeded' })
const now = Math.floor(Date.now() / 1000)
for (const [what, timestamp, body] of [['signed', now - 60, payload], ['retried', now, payload], ['tampered', now, payload.replace('succeeded', 'canceled')]] as const) {
  const headers = { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp }) }
  const response = await fetch(`http://127.0.0.1:${port}/webhooks/stripe`, { method: 'POST', headers, body })
  const answer: { check?: string } = await response.json()
  console.log(what, response.status, answer.check ?? JSON.stringify(answer))
}
console.log('handled:', handled.join(', '))
await app.close()
