import { Hono } from 'hono'
import { idempotency } from 'idem/hono'
import { openSqlite, sqliteStore } from 'idem/sqlite'

const db = await openSqlite(process.env.ORDERS_DB ?? 'orders.db') // bun:sqlite on Bun, node:sqlite on Deno
const store = sqliteStore({ db })
store.migrate()
db.exec('CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, account TEXT, amount INTEGER)')

const app = new Hono()
app.use('/orders', idempotency({ store, scope: (request) => request.headers.get('authorization') ?? 'anonymous' }))
app.post('/orders', async (c) => {
  const { tx, scope } = c.get('idem') // the key's transaction: the order commits with the key
  const { lastInsertRowid } = tx.prepare('INSERT INTO orders (account, amount) VALUES (?, ?)').run(scope, (await c.req.json()).amount)
  return c.json({ orderId: Number(lastInsertRowid) }, 201)
})
export default { port: Number(process.env.PORT ?? 3000), fetch: app.fetch }
