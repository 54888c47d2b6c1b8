// A Shopify webhook endpoint on Express (5, or 4.17+), behind the express.json() the
// app's other routes use: it keeps the raw bytes for the receiver, which checks the
// signature on them. Then three deliveries signed as Shopify's docs describe (node:crypto;
// Shopify publishes no signing library): an order, the same event from a second
// subscription to its topic, and one whose body was changed on the way.
// node --experimental-strip-types examples/webhooks/express.ts
import { createHmac } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { webhookReceiver } from 'idem/express'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { shopifySignature } from 'idem/webhooks'

const secret = process.env.SHOPIFY_CLIENT_SECRET ?? 'shpss_5f1c0ffee0d15ea5e'
const handled: string[] = []

/** The part of Shopify's order JSON this app reads (declared, not checked: the signature vouches for the sender). */
interface ShopifyOrder {
  id: number
  total_price: string
}

const app = express()
// For the app's other routes; `verify` keeps the bytes (mounting the receiver first works
// too). idem/express declares `rawBody` on the request, so this type-checks.
app.use(express.json({ verify: (req, _res, buf) => void (req.rawBody = buf) }))
app.post(
  '/webhooks/shopify',
  webhookReceiver<unknown, ShopifyOrder>({
    inbox: createInbox({ store: memoryStore(), consumer: 'shopify-webhooks' }), // records each event id once
    verify: shopifySignature({ secret }), // on the raw bytes; also gives the event id (X-Shopify-Event-Id)
    handler: async (tx, event) => void handled.push(`${event.id} ${event.request.get('x-shopify-topic')} ${event.body?.total_price}`), // your writes, through tx
  }),
)

// Trying it: the app on a free port, sent an order as Shopify signs it.
const server = app.listen(0, '127.0.0.1')
await new Promise((listening) => server.once('listening', listening))
const { port } = server.address() as AddressInfo
const payload = JSON.stringify({ id: 450789469, total_price: '15.00' })
const hmac = createHmac('sha256', secret).update(payload).digest('base64')
for (const [what, body, webhookId] of [
  ['signed', payload, 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043'],
  ['other subscription', payload, '0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b'],
  ['tampered', payload.replace('15.00', '0.01'), 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043'],
] as const) {
  const headers = { 'content-type': 'application/json', 'x-shopify-hmac-sha256': hmac, 'x-shopify-topic': 'orders/create', 'x-shopify-webhook-id': webhookId, 'x-shopify-event-id': '98880550-7158-44d4-b7cd-2c97c8a091b5' }
  const response = await fetch(`http://127.0.0.1:${port}/webhooks/shopify`, { method: 'POST', headers, body })
  const answer: { check?: string } = await response.json()
  console.log(what, response.status, answer.check ?? JSON.stringify(answer))
}
console.log('handled:', handled.join(', '))
server.close()
