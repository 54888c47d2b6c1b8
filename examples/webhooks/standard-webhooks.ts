// A Standard Webhooks endpoint (Svix, Clerk, Resend and other senders) whose signature is
// checked on the raw bytes, before anything is parsed, then four deliveries signed by the
// spec's reference library: a good one, one under Svix's header names (svix-id, …, as
// Svix, Clerk and Resend send them), one whose body was changed on the way, and one whose
// timestamp is ten minutes ahead of this clock.
// node --experimental-strip-types examples/webhooks/standard-webhooks.ts
import { Webhook } from 'standardwebhooks'
import { webhookReceiver } from 'idem/fetch'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { standardWebhooksSignature } from 'idem/webhooks'

const secret = process.env.WEBHOOK_SECRET ?? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
const webhooks = standardWebhooksSignature({ secret }) // or [newSecret, oldSecret] while rotating it

const receive = webhookReceiver({
  inbox: createInbox({ store: memoryStore(), consumer: 'user-webhooks' }), // records each event id once
  verify: webhooks, // checked on the raw bytes, before anything is parsed or recorded; also gives the event id
  handler: async (tx, event) => {
    // event.id, event.body (parsed once it verified): your writes, through tx, commit with the id
  },
})

// Trying it: deliveries signed as the sender signs them, under the spec's header names or Svix's.
const payload = JSON.stringify({ type: 'user.created', data: { id: 'user_29w83sxmDNGwOuEthce5gg56FcC' } })
const now = Date.now()
for (const [what, names, id, sentAt, body] of [
  ['signed', 'webhook', 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', now, payload],
  ['svix-* headers', 'svix', 'msg_2KWPBgN3pbkRXmYjZ0aN7vL1qSe', now, payload],
  ['tampered', 'webhook', 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', now, payload.replace('created', 'deleted')],
  ['from the future', 'webhook', 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', now + 600_000, payload],
] as const) {
  const signature = new Webhook(secret).sign(id, new Date(sentAt), payload)
  const headers = { [`${names}-id`]: id, [`${names}-timestamp`]: String(Math.floor(sentAt / 1000)), [`${names}-signature`]: signature }
  const response = await receive(new Request('http://localhost/webhooks/users', { method: 'POST', headers, body }))
  console.log(what, response.status, await response.text())
}
