// A Slack Events API endpoint whose signature is checked on the raw bytes, before anything
// is parsed, then four requests signed as Slack's docs describe (Slack publishes no
// signing library for Node; this is their algorithm with node:crypto): the url_verification
// Slack sends when the Request URL is saved, a good event, one whose body was changed on
// the way, and a good one replayed ten minutes later.
// node --experimental-strip-types examples/webhooks/slack.ts
import { createHmac } from 'node:crypto'
import { webhookReceiver } from 'idem/fetch'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { slackSignature } from 'idem/webhooks'

const secret = process.env.SLACK_SIGNING_SECRET ?? '8f742231b10e8888abcd99yyyzzz85a5'
const slackRequests = slackSignature({ secret }) // or [newSecret, oldSecret] while regenerating it

const receive = webhookReceiver({
  inbox: createInbox({ store: memoryStore(), consumer: 'slack-events' }), // records each event id once
  verify: slackRequests, // checked on the raw bytes, before anything is parsed or recorded; also gives the event id and answers url_verification
  handler: async (tx, event) => {
    // event.id, event.body (parsed once it verified): your writes, through tx, commit with the id
  },
})

// Trying it: saving the Request URL, then an event callback, each signed as Slack signs it (v0= and the hex HMAC-SHA256 of v0:<timestamp>:<body>).
const challenge = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' })
const payload = JSON.stringify({ type: 'event_callback', event_id: 'Ev0PV52K25', event: { type: 'app_mention', text: 'hi' } })
const now = Math.floor(Date.now() / 1000)
for (const [what, timestamp, signed, body] of [['url_verification', now, challenge, challenge], ['signed', now, payload, payload], ['tampered', now, payload, payload.replace('hi', 'bye')], ['replayed', now - 600, payload, payload]] as const) {
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${signed}`).digest('hex')}`
  const headers = { 'x-slack-signature': signature, 'x-slack-request-timestamp': String(timestamp) }
  const response = await receive(new Request('http://localhost/slack/events', { method: 'POST', headers, body }))
  console.log(what, response.status, await response.text())
}
