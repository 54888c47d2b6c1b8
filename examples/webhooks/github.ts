// A GitHub webhook endpoint whose signature is checked on the raw bytes, before anything
// is parsed, then three deliveries signed by GitHub's own @octokit/webhooks-methods: a good
// one, one whose body was changed on the way, and one signed with another secret.
// node --experimental-strip-types examples/webhooks/github.ts
import { sign } from '@octokit/webhooks-methods'
import { webhookReceiver } from 'idem/fetch'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { githubSignature } from 'idem/webhooks'

const secret = process.env.GITHUB_WEBHOOK_SECRET ?? 'It5-a-s3cret-0nly-GitHub-kn0ws'
const githubWebhooks = githubSignature({ secret }) // or [newSecret, oldSecret] while changing it

const receive = webhookReceiver({
  inbox: createInbox({ store: memoryStore(), consumer: 'github-webhooks' }), // records each event id once
  verify: githubWebhooks, // checked on the raw bytes, before anything is parsed or recorded; also gives the event id
  handler: async (tx, event) => {
    // event.id, event.body (parsed once it verified): your writes, through tx, commit with the id
  },
})

// Trying it: a push, as GitHub delivers it.
const payload = JSON.stringify({ ref: 'refs/heads/main', after: '6113728f27ae82c7b1a177c8d03f9e96e0adf246' })
for (const [what, key, body] of [['signed', secret, payload], ['tampered', secret, payload.replace('main', 'release')], ['other secret', 'not-the-secret', payload]]) {
  const headers = { 'x-hub-signature-256': await sign(key, payload), 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958', 'x-github-event': 'push' }
  const response = await receive(new Request('http://localhost/webhooks/github', { method: 'POST', headers, body }))
  console.log(what, response.status, await response.text())
}
