// A Slack Events API endpoint whose signature is checked on the raw bytes, before anything
// is parsed, then three requests signed as Slack's docs describe (Slack publishes no
// signing library for Node; this is their algorithm with node:crypto): a good one, one
// whose body was changed on the way, and a good one replayed ten minutes later.
// node examples/webhooks/slack.mjs
import { createHmac } from 'node:crypto'
import { slackSignature } from 'idem/webhooks'

const secret = process.env.SLACK_SIGNING_SECRET ?? '8f742231b10e8888abcd99yyyzzz85a5'
const slackRequests = slackSignature({ secret }) // or [newSecret, oldSecret] while regenerating it

async function receive(request) {
  const body = new Uint8Array(await request.arrayBuffer())
  const verification = slackRequests.verify({ header: (name) => request.headers.get(name), body })
  if (verification.status === 'refused') return Response.json({ check: verification.check, detail: verification.detail }, { status: 401 })
  const callback = JSON.parse(new TextDecoder().decode(body)) // parsed only once it verified
  return Response.json({ received: verification.eventId, type: callback.event.type })
}

// Trying it: an event callback, signed as Slack signs it (v0= and the hex HMAC-SHA256 of v0:<timestamp>:<body>).
const payload = JSON.stringify({ type: 'event_callback', event_id: 'Ev0PV52K25', event: { type: 'app_mention', text: 'hi' } })
const now = Math.floor(Date.now() / 1000)
for (const [what, timestamp, body] of [['signed', now, payload], ['tampered', now, payload.replace('hi', 'bye')], ['replayed', now - 600, payload]]) {
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${payload}`).digest('hex')}`
  const headers = { 'x-slack-signature': signature, 'x-slack-request-timestamp': String(timestamp) }
  const response = await receive(new Request('http://localhost/slack/events', { method: 'POST', headers, body }))
  console.log(what, response.status, await response.text())
}
