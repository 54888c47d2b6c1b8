// An order API on Hono with idem's SQLite store, as Bun and Deno serve it: each starts
// the default export's fetch. `PORT=3000 bun examples/guides/hono-app.ts`, or
// `deno serve -A --port 3000 examples/guides/hono-app.ts`.
import { Hono } from 'hono'
import { idempotency, type IdemVariables } from 'idem/hono'
import { openSqlite, sqliteStore, type SqliteDatabase } from 'idem/sqlite'

const db = await openSqlite(process.env.ORDERS_DB ?? 'orders.db') // bun:sqlite on Bun, node:sqlite on Deno
const store = sqliteStore({ db })
store.migrate()
db.exec('CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, account TEXT, amount INTEGER)')

const app = new Hono<{ Variables: IdemVariables<SqliteDatabase> }>()
app.use('/orders', idempotency({ store, scope: (c) => c.req.header('authorization') ?? 'anonymous' }))
app.post('/orders', async (c) => {
  const { tx, scope } = c.get('idem')! // the key's transaction: the order commits with the key
  const { amount } = await c.req.json<{ amount: number }>()
  const { lastInsertRowid } = tx.prepare('INSERT INTO orders (account, amount) VALUES (?, ?)').run(scope, amount)
  return c.json({ orderId: Number(lastInsertRowid), amount }, 201)
})

export default { port: Number(process.env.PORT ?? 3000), fetch: app.fetch }
