// A Standard Webhooks endpoint (Svix, Clerk, Resend and other senders) whose signature is
// checked on the raw bytes, before anything is parsed, then three deliveries signed by the
// spec's reference library: a good one, one whose body was changed on the way, and one
// whose timestamp is ten minutes ahead of this clock.
// node examples/webhooks/standard-webhooks.mjs
import { Webhook } from 'standardwebhooks'
import { standardWebhooksSignature } from 'idem/webhooks'

const secret = process.env.WEBHOOK_SECRET ?? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
const webhooks = standardWebhooksSignature({ secret }) // or [newSecret, oldSecret] while rotating it

async function receive(request) {
  const body = new Uint8Array(await request.arrayBuffer())
  const verification = webhooks.verify({ header: (name) => request.headers.get(name), body })
  if (verification.status === 'refused') return Response.json({ check: verification.check, detail: verification.detail }, { status: 401 })
  const event = JSON.parse(new TextDecoder().decode(body)) // parsed only once it verified
  return Response.json({ received: verification.eventId, type: event.type })
}

// Trying it: deliveries signed as the sender signs them.
const payload = JSON.stringify({ type: 'user.created', data: { id: 'user_29w83sxmDNGwOuEthce5gg56FcC' } })
const now = Date.now()
for (const [what, sentAt, body] of [['signed', now, payload], ['tampered', now, payload.replace('created', 'deleted')], ['from the future', now + 600_000, payload]]) {
  const id = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W'
  const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(sentAt / 1000)), 'webhook-signature': new Webhook(secret).sign(id, new Date(sentAt), payload) }
  const response = await receive(new Request('http://localhost/webhooks/users', { method: 'POST', headers, body }))
  console.log(what, response.status, await response.text())
}
