// A Stripe webhook endpoint whose signature is checked on the raw bytes, before anything
// is parsed, then three deliveries signed by Stripe's own SDK: a good one, one whose body
// was changed on the way, and a good one replayed ten minutes later.
// node examples/webhooks/stripe.mjs
import Stripe from 'stripe'
import { stripeSignature } from 'idem/webhooks'

const secret = process.env.STRIPE_WEBHOOK_SECRET ?? 'whsec_test_5a1e0c0ffee'
const stripeWebhooks = stripeSignature({ secret }) // or [newSecret, oldSecret] while rolling it

async function receive(request) {
  const body = new Uint8Array(await request.arrayBuffer())
  const verification = stripeWebhooks.verify({ header: (name) => request.headers.get(name), body })
  if (verification.status === 'refused') return Response.json({ check: verification.check, detail: verification.detail }, { status: 401 })
  const event = JSON.parse(new TextDecoder().decode(body)) // parsed only once it verified
  return Response.json({ received: verification.eventId, type: event.type })
}

// Trying it: what `stripe listen` forwards, signed with Stripe's SDK.
const stripe = new Stripe('sk_test_unused')
const payload = JSON.stringify({ id: 'evt_3PtQ1', object: 'event', type: 'payment_intent.succeeded' })
const now = Math.floor(Date.now() / 1000)
for (const [what, timestamp, body] of [['signed', now, payload], ['tampered', now, payload.replace('succeeded', 'canceled')], ['replayed', now - 600, payload]]) {
  const header = stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp })
  const response = await receive(new Request('http://localhost/webhooks/stripe', { method: 'POST', headers: { 'stripe-signature': header }, body }))
  console.log(what, response.status, await response.text())
}
