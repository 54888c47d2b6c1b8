// A Clerk webhook endpoint (Standard Webhooks, under Svix's header names) on Hono 4, after
// a middleware that reads the body as bytes, which Hono keeps for the receiver (one that
// reads c.req.json() first would leave none to verify). Then three deliveries signed by
// the Standard Webhooks library: a user created, Clerk's retry of it (signed anew), and
// one whose body was changed on the way.
// node --experimental-strip-types examples/webhooks/hono.ts
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { Webhook } from 'standardwebhooks'
import { webhookReceiver } from 'idem/hono'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { standardWebhooksSignature } from 'idem/webhooks'

const secret = process.env.CLERK_WEBHOOK_SIGNING_SECRET ?? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
const handled: string[] = []

/** The part of Clerk's event JSON this app reads (declared, not checked: the signature vouches for the sender). */
interface ClerkEvent {
  type: string
  data: { id: string }
}

const app = new Hono<{ Variables: { size: number } }>()
app.use(async (c, next) => {
  c.set('size', (await c.req.arrayBuffer()).byteLength) // say, a size limit of the app's
  await next()
})
app.post(
  '/webhooks/clerk',
  webhookReceiver<unknown, ClerkEvent>({
    inbox: createInbox({ store: memoryStore(), consumer: 'clerk-webhooks' }), // records each event id once
    verify: standardWebhooksSignature({ secret }), // svix-* or webhook-* headers; also gives the event id (svix-id)
    handler: async (tx, event) => void handled.push(`${event.id} ${event.body?.type} (${event.request.get('size')} bytes)`), // your writes, through tx
  }),
)

// Trying it: the app on a free port, sent a user.created as Clerk (through Svix) sends it.
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
await new Promise((listening) => server.once('listening', listening))
const { port } = server.address() as AddressInfo
const payload = JSON.stringify({ type: 'user.created', data: { id: 'user_29w83sxmDNGwOuEthce5gg56FcC' } })
const id = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W'
const now = Date.now()
for (const [what, sentAt, body] of [['signed', now - 5_000, payload], ['retried', now, payload], ['tampered', now, payload.replace('created', 'deleted')]] as const) {
  const headers = { 'content-type': 'application/json', 'svix-id': id, 'svix-timestamp': String(Math.floor(sentAt / 1000)), 'svix-signature': new Webhook(secret).sign(id, new Date(sentAt), payload) }
  const response = await fetch(`http://127.0.0.1:${port}/webhooks/clerk`, { method: 'POST', headers, body })
  const answer: { check?: string } = await response.json()
  console.log(what, response.status, answer.check ?? JSON.stringify(answer))
}
console.log('handled:', handled.join(', '))
server.close()
