// A Stripe webhook endpoint whose signature is checked on the raw bytes, before anything
// is parsed, then three deliveries signed by Stripe's own SDK: a good one, one whose body
// was changed on the way, and a good one replayed ten minutes later.
// node --experimental-strip-types examples/webhooks/stripe.ts
import Stripe from 'stripe'
import { webhookReceiver } from 'idem/fetch'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { stripeSignature } from 'idem/webhooks'

const secret = process.env.STRIPE_WEBHOOK_SECRET ?? 'whsec_test_5a1e0c0ffee'
const stripeWebhooks = stripeSignature({ secret }) // or [newSecret, oldSecret] while rolling it

// The body's type is Stripe's own (declared, not checked: the signature vouches for the sender).
const receive = webhookReceiver<unknown, Stripe.Event>({
  inbox: createInbox({ store: memoryStore(), consumer: 'stripe-webhooks' }), // records each event id once
  verify: stripeWebhooks, // checked on the raw bytes, before anything is parsed or recorded; also gives the event id
  handler: async (tx, event) => {
    // event.id, event.body (parsed once it verified): your writes, through tx, commit with the id
    if (event.body?.type === 'payment_intent.succeeded') {
      const intent = event.body.data.object // Stripe.PaymentIntent
      void intent.amount
    }
  },
})

// Trying it: what `stripe listen` forwards, signed with Stripe's SDK.
const stripe = new Stripe('sk_test_unused')
const payload = JSON.stringify({ id: 'evt_3PtQ1', object: 'event', type: 'payment_intent.succeeded', data: { object: { id: 'pi_3PtQ1', object: 'payment_intent', amount: 1500 } } })
const now = Math.floor(Date.now() / 1000)
for (const [what, timestamp, body] of [['signed', now, payload], ['tampered', now, payload.replace('succeeded', 'canceled')], ['replayed', now - 600, payload]] as const) {
  const header = stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp })
  const response = await receive(new Request('http://localhost/webhooks/stripe', { method: 'POST', headers: { 'stripe-signature': header }, body }))
  console.log(what, response.status, await response.text())
}
