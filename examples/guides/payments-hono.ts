// A payments API on Hono and Postgres: the payment row is written in the transaction that
// records the Idempotency-Key, so a retry never charges twice and a failure leaves nothing.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --experimental-strip-types examples/guides/payments-hono.ts
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import pg from 'pg'
import { idempotency, type IdemVariables } from 'idem/hono'
import { postgresStore, type PgClient } from 'idem/postgres'

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
// A schema of its own, so that runs side by side never meet; dropped at the end.
const schema = `guide_pay_hono_${randomBytes(4).toString('hex')}`
await pool.query(`CREATE SCHEMA ${schema}`)
const store = postgresStore({ pool, schema })
await store.migrate()
await pool.query(`CREATE TABLE ${schema}.payments (id bigserial PRIMARY KEY, account text NOT NULL, amount int NOT NULL)`)

let ledgerDown = true // the first attempt fails after its INSERT, as a crash there would

const app = new Hono<{ Variables: IdemVariables<PgClient> }>()
app.use('/payments', idempotency({ store, scope: (c) => c.req.header('authorization') ?? 'anonymous' }))
app.post('/payments', async (c) => {
  const { amount } = await c.req.json<{ amount: number }>()
  const { tx, scope } = c.get('idem')! // the key's transaction: the payment commits with the key or not at all
  const { rows } = await tx.query<{ id: string }>(`INSERT INTO ${schema}.payments (account, amount) VALUES ($1, $2) RETURNING id`, [scope, amount])
  if (ledgerDown) {
    ledgerDown = false
    throw new Error('the ledger went away')
  }
  return c.json({ paymentId: rows[0].id, amount }, 201)
})
app.onError((error, c) => c.json({ error: error.message }, 500))

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
await new Promise((ready) => server.once('listening', ready))
const { port } = server.address() as AddressInfo
try {
  for (const [key, amount] of [['pay-1', 1500], ['pay-1', 1500], ['pay-1', 1500], ['pay-1', 9999]] as const) {
    const response = await fetch(`http://127.0.0.1:${port}/payments`, {
      method: 'POST',
      headers: { authorization: 'Bearer acct_42', 'idempotency-key': `"${key}"`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount }),
    })
    const replayed = response.headers.get('idempotent-replayed') === 'true' ? ' (replayed)' : ''
    console.log(`${response.status}${replayed} ${await response.text()}`)
  }
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.payments`)
  console.log(`payments in the table: ${rows[0].n}`)
} finally {
  server.close()
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
