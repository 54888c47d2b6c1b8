// The Idempotency-Key middleware on a Koa app (Koa 2 or 3), with the order written in the
// same transaction as the key. Run: node --experimental-strip-types examples/http-koa.ts
import type { AddressInfo } from 'node:net'
import Database from 'better-sqlite3'
import Koa from 'koa'
import { idempotency, type IdemState } from 'idem/koa'
import { sqliteStore, type SqliteDatabase } from 'idem/sqlite'

// What a body parser declares on Koa's request (@koa/bodyparser does the same).
declare module 'koa' {
  interface Request {
    body?: unknown
  }
}

const db = new Database(':memory:')
db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY, account TEXT, amount INTEGER)')
const store = sqliteStore({ db })
store.migrate() // idem's table, beside the app's

const app = new Koa<IdemState<SqliteDatabase>>()
app.use(
  idempotency({
    store,
    // The key belongs to the authenticated principal, never to the client's say-so.
    scope: (ctx) => ctx.get('authorization') || 'anonymous',
    routes: ['/orders'],
  }),
)
// The body parser goes after idempotency(), which hands it the bytes it read. A JSON
// parser by hand here; @koa/bodyparser puts the same on ctx.request.body.
app.use(async (ctx, next) => {
  const chunks: Buffer[] = []
  for await (const chunk of ctx.req) chunks.push(chunk)
  ctx.request.body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'))
  await next()
})
app.use(async (ctx) => {
  if (ctx.method !== 'POST' || ctx.path !== '/orders') return // Koa answers 404
  const { amount } = ctx.request.body as { amount: number } // what the parser above made of the JSON
  const { tx, scope } = ctx.state.idem! // the open transaction: the order commits with the key
  const { lastInsertRowid } = tx.prepare('INSERT INTO orders (account, amount) VALUES (?, ?)').run(scope, amount)
  ctx.status = 201
  ctx.body = { orderId: Number(lastInsertRowid), amount }
})

const server = app.listen(0, '127.0.0.1')
await new Promise((ready) => server.once('listening', ready))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`
const headers = { authorization: 'Bearer acct_42', 'content-type': 'application/json' }

// The same key twice (the retry is replayed), then with another amount (422), then a new key.
for (const [key, amount] of [['k-1', 1500], ['k-1', 1500], ['k-1', 9999], ['k-2', 700]] as const) {
  const response = await fetch(url, { method: 'POST', headers: { ...headers, 'idempotency-key': `"${key}"` }, body: JSON.stringify({ amount }) })
  console.log(response.status, response.headers.get('idempotent-replayed') ?? '-', await response.text())
}
console.log('orders in the table:', db.prepare('SELECT count(*) AS n FROM orders').pluck().get())
server.close()
