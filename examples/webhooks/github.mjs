// A GitHub webhook endpoint whose signature is checked on the raw bytes, before anything
// is parsed, then three deliveries signed by GitHub's own @octokit/webhooks-methods: a good
// one, one whose body was changed on the way, and one signed with another secret.
// node examples/webhooks/github.mjs
import { sign } from '@octokit/webhooks-methods'
import { githubSignature } from 'idem/webhooks'

const secret = process.env.GITHUB_WEBHOOK_SECRET ?? 'It5-a-s3cret-0nly-GitHub-kn0ws'
const githubWebhooks = githubSignature({ secret }) // or [newSecret, oldSecret] while changing it

async function receive(request) {
  const body = new Uint8Array(await request.arrayBuffer())
  const verification = githubWebhooks.verify({ header: (name) => request.headers.get(name), body })
  if (verification.status === 'refused') return Response.json({ check: verification.check, detail: verification.detail }, { status: 401 })
  const event = JSON.parse(new TextDecoder().decode(body)) // parsed only once it verified
  return Response.json({ received: verification.eventId, event: request.headers.get('x-github-event'), ref: event.ref })
}

// Trying it: a push, as GitHub delivers it.
const payload = JSON.stringify({ ref: 'refs/heads/main', after: '6113728f27ae82c7b1a177c8d03f9e96e0adf246' })
for (const [what, key, body] of [['signed', secret, payload], ['tampered', secret, payload.replace('main', 'release')], ['other secret', 'not-the-secret', payload]]) {
  const headers = { 'x-hub-signature-256': await sign(key, payload), 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958', 'x-github-event': 'push' }
  const response = await receive(new Request('http://localhost/webhooks/github', { method: 'POST', headers, body }))
  console.log(what, response.status, await response.text())
}
