// One Stripe webhook endpoint on Express, Fastify and Hono, each with a body parser in
// front, as apps have: the signature is checked on the raw bytes, the event is handled
// once. Each server gets a delivery signed by Stripe's SDK, the same delivery again, and
// a tampered one. node examples/webhooks/frameworks.mjs
import { serve } from '@hono/node-server'
import express from 'express'
import fastify from 'fastify'
import { Hono } from 'hono'
import Stripe from 'stripe'
import { webhookReceiver as onExpress } from 'idem/express'
import { webhookReceiver as onFastify } from 'idem/fastify'
import { webhookReceiver as onHono } from 'idem/hono'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { stripeSignature } from 'idem/webhooks'

const secret = process.env.STRIPE_WEBHOOK_SECRET ?? 'whsec_test_5a1e0c0ffee'
const store = memoryStore()
const handled = []
const options = (consumer) => ({
  inbox: createInbox({ store, consumer }),
  verify: stripeSignature({ secret }), // the event id is Stripe's evt_… id
  handler: (tx, event) => void handled.push(`${consumer} ${event.id}`),
})

// Express: express.json() for the other routes keeps the raw bytes for the receiver.
const app = express()
app.use(express.json({ verify: (req, _res, buf) => void (req.rawBody = buf) }))
app.post('/webhooks/stripe', onExpress(options('express')))

// Fastify: the webhook routes in a plugin of their own, their bodies parsed as bytes.
const fast = fastify()
await fast.register(async (webhooks) => {
  webhooks.removeAllContentTypeParsers()
  webhooks.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
  webhooks.post('/webhooks/stripe', onFastify(options('fastify')))
})

// Hono: mounted as a route; an earlier middleware may read c.req.arrayBuffer(), not c.req.json().
const hono = new Hono()
hono.post('/webhooks/stripe', onHono(options('hono')))

// Trying it: each server on a free port, sent what `stripe listen` forwards.
const servers = {
  express: await new Promise((resolve) => { const server = app.listen(0, '127.0.0.1', () => resolve(server)) }),
  fastify: (await fast.listen({ port: 0, host: '127.0.0.1' }), fast.server),
  hono: await new Promise((resolve) => { const server = serve({ fetch: hono.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(server)) }),
}
const stripe = new Stripe('sk_test_unused')
const payload = JSON.stringify({ id: 'evt_3PtQ1', object: 'event', type: 'payment_intent.succeeded' })
const header = stripe.webhooks.generateTestHeaderString({ payload, secret })
for (const [name, server] of Object.entries(servers)) {
  const statuses = []
  for (const body of [payload, payload, payload.replace('succeeded', 'canceled')]) {
    const response = await fetch(`http://127.0.0.1:${server.address().port}/webhooks/stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': header },
      body,
    })
    const answer = await response.json()
    statuses.push(`${response.status}${answer.duplicate ? ' duplicate' : ''}${answer.check ? ` ${answer.check}` : ''}`)
  }
  console.log(name, statuses.join(', '))
}
console.log('handled:', handled.join(', '))
await fast.close()
servers.express.close()
servers.hono.close()
