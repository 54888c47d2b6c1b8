// A GitHub webhook endpoint on Koa (3, or 2.16+), mounted before the JSON body parser the
// app's other routes use: it reads the raw bytes from the request itself and checks the
// signature on them. Then three deliveries signed by GitHub's @octokit/webhooks-methods: a
// push, GitHub's redelivery of it (same X-GitHub-Delivery), and one whose body was changed.
// node --experimental-strip-types examples/webhooks/koa.ts
import { sign } from '@octokit/webhooks-methods'
import type { AddressInfo } from 'node:net'
import Koa from 'koa'
import { webhookReceiver } from 'idem/koa'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite… in production
import { createInbox } from 'idem/queue'
import { githubSignature } from 'idem/webhooks'

const secret = process.env.GITHUB_WEBHOOK_SECRET ?? 'It5-a-s3cret-0nly-GitHub-kn0ws'
const handled: string[] = []

// What a body parser declares on Koa's request (@koa/bodyparser does the same).
declare module 'koa' {
  interface Request {
    body?: unknown
  }
}

const github = webhookReceiver({
  inbox: createInbox({ store: memoryStore(), consumer: 'github-webhooks' }), // records each event id once
  verify: githubSignature({ secret }), // on the raw bytes; also gives the event id (X-GitHub-Delivery)
  handler: async (tx, event) => void handled.push(`${event.id} ${event.request.get('x-github-event')}`), // your writes, through tx
})
const app = new Koa()
// A router's route in an app: router.post('/webhooks/github', github), before the body parser.
app.use((ctx, next) => (ctx.method === 'POST' && ctx.path === '/webhooks/github' ? github(ctx, next) : next()))
app.use(async (ctx, next) => {
  const chunks: Buffer[] = [] // the app's JSON body parser, for the other routes (@koa/bodyparser, say)
  for await (const chunk of ctx.req) chunks.push(chunk)
  ctx.request.body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'))
  await next()
})

// Trying it: the app on a free port, sent a push as GitHub delivers it.
const server = app.listen(0, '127.0.0.1')
await new Promise((listening) => server.once('listening', listening))
const { port } = server.address() as AddressInfo
const payload = JSON.stringify({ ref: 'refs/heads/main', after: '6113728f27ae82c7b1a177c8d03f9e96e0adf246' })
for (const [what, body] of [['signed', payload], ['redelivered', payload], ['tampered', payload.replace('main', 'release')]] as const) {
  const headers = { 'content-type': 'application/json', 'x-hub-signature-256': await sign(secret, payload), 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958', 'x-github-event': 'push' }
  const response = await fetch(`http://127.0.0.1:${port}/webhooks/github`, { method: 'POST', headers, body })
  const answer: { check?: string } = await response.json()
  console.log(what, response.status, answer.check ?? JSON.stringify(answer))
}
console.log('handled:', handled.join(', '))
server.close()
