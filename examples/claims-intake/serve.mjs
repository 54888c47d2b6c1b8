// npm run serve: the claims-intake service alone, with its worker.
//   PORT=3000                      where it listens
//   DATABASE_URL=postgres://…      use Postgres (schema CLAIMS_SCHEMA, default claims_intake) instead of SQLite
//   CLAIMS_DB=.data/claims-intake.db   the SQLite file
//   FAULT_DROP_AFTER_COMMIT=0.3    drop that share of POST responses after the work committed
//   MODE=naive                     run without idem, to compare
import { serve } from '@hono/node-server'
import { resolve } from 'node:path'
import { openDatabase } from './database.mjs'
import { createService } from './service.mjs'

const port = Number(process.env.PORT ?? 3000)
const mode = process.env.MODE === 'naive' ? 'naive' : 'idem'
const drop = Number(process.env.FAULT_DROP_AFTER_COMMIT ?? 0)
if (!Number.isInteger(port) || port < 0 || port > 65535) exit(`PORT must be a port number, got ${process.env.PORT}`)
if (!(drop >= 0 && drop < 1)) exit(`FAULT_DROP_AFTER_COMMIT must be a probability in [0, 1), got ${process.env.FAULT_DROP_AFTER_COMMIT}`)

const database = await openDatabase(
  process.env.DATABASE_URL
    ? { url: process.env.DATABASE_URL, schema: process.env.CLAIMS_SCHEMA ?? 'claims_intake' }
    : { file: resolve(process.env.CLAIMS_DB ?? '.data/claims-intake.db') },
)
const service = createService({ mode, database, dropAfterCommit: drop })
const server = serve({ fetch: service.app.fetch, hostname: process.env.HOST ?? '127.0.0.1', port })
await new Promise((ready) => server.once('listening', ready))

// The worker: drains the queue, then polls.
let stopping = false
const worker = (async () => {
  while (!stopping) {
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
