// npm run serve: the claims-intake service alone, with its worker.
//   PORT=3000                      where it listens
//   DATABASE_URL=postgres://…      use Postgres (schema CLAIMS_SCHEMA, default claims_intake) instead of SQLite
//   CLAIMS_DB=.data/claims-intake.db   the SQLite file
//   FAULT_DROP_AFTER_COMMIT=0.3    drop that share of POST responses after the work committed
//   FAULT_CRASH_BEFORE_ACK=0.3     "crash" the worker after that share of commits, before the ack: the broker redelivers
//   RECONCILE_EVERY_MS=10000       how often the worker reconciles the per-intent tables (the duplicate-ratio gauge)
//   MODE=naive                     run without idem, to compare
//   PAYMENT_WEBHOOK_SECRET=whsec_… the secret POST /webhooks/payments verifies Standard Webhooks signatures with (a new one by default)
import { serve } from '@hono/node-server'
import { resolve } from 'node:path'
import { openDatabase } from './database.mjs'
import { createService } from './service.mjs'

const port = Number(process.env.PORT ?? 3000)
const mode = process.env.MODE === 'naive' ? 'naive' : 'idem'
const drop = Number(process.env.FAULT_DROP_AFTER_COMMIT ?? 0)
const crash = Number(process.env.FAULT_CRASH_BEFORE_ACK ?? 0)
const reconcileEvery = Number(process.env.RECONCILE_EVERY_MS ?? 10_000)
if (!Number.isInteger(port) || port < 0 || port > 65535) exit(`PORT must be a port number, got ${process.env.PORT}`)
if (!(drop >= 0 && drop < 1)) exit(`FAULT_DROP_AFTER_COMMIT must be a probability in [0, 1), got ${process.env.FAULT_DROP_AFTER_COMMIT}`)
if (!(crash >= 0 && crash < 1)) exit(`FAULT_CRASH_BEFORE_ACK must be a probability in [0, 1), got ${process.env.FAULT_CRASH_BEFORE_ACK}`)
if (!(Number.isInteger(reconcileEvery) && reconcileEvery >= 100)) exit(`RECONCILE_EVERY_MS must be a whole number of milliseconds, at least 100, got ${process.env.RECONCILE_EVERY_MS}`)

const database = await openDatabase(
  process.env.DATABASE_URL
    ? { url: process.env.DATABASE_URL, schema: process.env.CLAIMS_SCHEMA ?? 'claims_intake' }
    : { file: resolve(process.env.CLAIMS_DB ?? '.data/claims-intake.db') },
)
const webhookSecret = process.env.PAYMENT_WEBHOOK_SECRET || undefined
if (webhookSecret !== undefined && !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(webhookSecret)) exit('PAYMENT_WEBHOOK_SECRET must be a whsec_ secret (whsec_ and base64)')
const service = createService({ mode, database, dropAfterCommit: drop, crashBeforeAck: crash, webhookSecret })

// The last minute of /metrics, a sample a second, so the status page opened on a running
// service paints that minute at once instead of starting from one point.
// GET /metrics/recent?names=a,b → [{ t, text }], text holding only those families' lines.
const recent = []
const sampler = setInterval(async () => {
  recent.push({ t: Date.now(), text: await service.registry.metrics() })
  while (recent[0].t < Date.now() - 60_000) recent.shift()
}, 1000)
service.app.get('/metrics/recent', (c) => {
  const names = c.req.query('names')?.split(',')
  const wanted = (line) => names === undefined || names.some((name) => line.startsWith(name))
  return c.json(recent.map(({ t, text }) => ({ t, text: text.split('\n').filter((line) => !line.startsWith('#') && wanted(line)).join('\n') })))
})

const server = serve({ fetch: service.app.fetch, hostname: process.env.HOST ?? '127.0.0.1', port })
await new Promise((ready) => server.once('listening', ready))

// The worker: drains the queue, then polls; and reconciles now and then, as an operator's job would.
let stopping = false
let reconciledAt = 0
const worker = (async () => {
  while (!stopping) {
    if (mode === 'idem' && Date.now() - reconciledAt >= reconcileEvery) {
      reconciledAt = Date.now()
      await service.reconcileNow().catch((error) => console.error('reconcile:', error.message))
    }
    if (!(await service.workOnce().catch((error) => (console.error('worker:', error), false)))) await new Promise((r) => setTimeout(r, 100))
  }
})()

console.log(`claims-intake (${mode}) listening on http://127.0.0.1:${server.address().port}`)
console.log(`  data:  ${database.where}`)
console.log(`  reset: ${database.reset}`)
console.log(`  try:   curl -i -X POST localhost:${server.address().port}/orders -H 'Authorization: Bearer acct_1' \\`)
console.log(`           -H 'Idempotency-Key: "order-1"' -H 'content-type: application/json' -d '{"amount":1500,"currency":"eur","customer":"alice"}'`)

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    stopping = true
    clearInterval(sampler)
    await worker
    server.close()
    await database.close()
    process.exit(0)
  })
}

function exit(message) {
  console.error(message)
  process.exit(2)
}
