// A Shopify webhook endpoint whose signature is checked on the raw bytes, before anything
// is parsed, then four deliveries signed as Shopify's docs describe (Shopify publishes no
// signing library; this is their algorithm with node:crypto): a good one, the same event
// from a second subscription to its topic, one whose body was changed on the way, and one
// whose signature header was cut short.
// node --experimental-strip-types examples/webhooks/shopify.ts
import { createHmac } from 'node:crypto'
import { webhookReceiver } from 'idem/fetch'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { shopifySignature } from 'idem/webhooks'

const secret = process.env.SHOPIFY_CLIENT_SECRET ?? 'shpss_5f1c0ffee0d15ea5e'
const shopifyWebhooks = shopifySignature({ secret }) // or [newSecret, oldSecret] while rotating it

const receive = webhookReceiver({
  inbox: createInbox({ store: memoryStore(), consumer: 'shopify-webhooks' }), // records each event id once
  verify: shopifyWebhooks, // checked on the raw bytes, before anything is parsed or recorded; also gives the event id
  handler: async (tx, event) => {
    // event.id, event.body (parsed once it verified): your writes, through tx, commit with the id
  },
})

// Trying it: an order, signed as Shopify signs it (base64 HMAC-SHA256 of the raw body).
const payload = JSON.stringify({ id: 450789469, total_price: '15.00' })
const signature = createHmac('sha256', secret).update(payload).digest('base64')
const eventId = '98880550-7158-44d4-b7cd-2c97c8a091b5' // X-Shopify-Event-Id: one per event, on every subscription's delivery of it
for (const [what, hmac, body, webhookId] of [
  ['signed', signature, payload, 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043'],
  ['other subscription', signature, payload, '0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b'],
  ['tampered', signature, payload.replace('15.00', '0.01'), 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043'],
  ['cut short', signature.slice(0, 20), payload, 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043'],
]) {
  const headers = { 'x-shopify-hmac-sha256': hmac, 'x-shopify-event-id': eventId, 'x-shopify-webhook-id': webhookId, 'x-shopify-topic': 'orders/create' }
  const response = await receive(new Request('http://localhost/webhooks/shopify', { method: 'POST', headers, body }))
  console.log(what, response.status, await response.text())
}
