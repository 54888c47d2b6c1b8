// The Idempotency-Key middleware on a Hono app, with the order written in the same
// transaction as the key. Run: node examples/http-hono.mjs
import { serve } from '@hono/node-server'
import Database from 'better-sqlite3'
import { Hono } from 'hono'
import { idempotency } from 'idem/hono'
import { sqliteStore } from 'idem/sqlite'

const db = new Database(':memory:')
const store = sqliteStore({ db })
store.migrate()
db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY, account TEXT, amount INTEGER)')

const app = new Hono()
app.use(
  '/orders',
  idempotency({
    store,
    // The key belongs to the authenticated principal, never to the client's say-so.
    scope: (c) => c.req.header('authorization') ?? 'anonymous',
  }),
)
app.post('/orders', async (c) => {
  const { amount } = await c.req.json()
  const { tx, scope } = c.get('idem') // the open transaction: the order commits with the key
  const { lastInsertRowid } = tx.prepare('INSERT INTO orders (account, amount) VALUES (?, ?)').run(scope, amount)
  return c.json({ orderId: Number(lastInsertRowid), amount }, 201)
})

const server = serve({ fetch: app.fetch, port: 0 })
await new Promise((ready) => server.once('listening', ready))
const post = (key, amount) =>
  fetch(`http://127.0.0.1:${server.address().port}/orders`, {
    method: 'POST',
    headers: { authorization: 'Bearer acct_42', 'idempotency-key': `"${key}"`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount }),
  })

for (const [key, amount] of [['k-1', 1500], ['k-1', 1500], ['k-1', 9999], ['k-2', 700]]) {
  const response = await post(key, amount)
  const replayed = response.headers.get('idempotent-replayed') === 'true' ? ' (replayed)' : ''
  console.log(`${response.status}${replayed} ${await response.text()}`)
}
console.log('orders in the table:', db.prepare('SELECT count(*) AS n FROM orders').get().n)
server.close()
