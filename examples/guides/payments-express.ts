// The same payments API on Express (5, or 4) and Postgres: the payment row is written in
// the transaction that records the Idempotency-Key.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --experimental-strip-types examples/guides/payments-express.ts
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import express, { type ErrorRequestHandler } from 'express'
import pg from 'pg'
import { idempotency, type IdempotencyContext } from 'idem/express'
import { postgresStore, type PgClient } from 'idem/postgres'

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
const schema = `guide_pay_express_${randomBytes(4).toString('hex')}`
await pool.query(`CREATE SCHEMA ${schema}`)
const store = postgresStore({ pool, schema })
await store.migrate()
await pool.query(`CREATE TABLE ${schema}.payments (id bigserial PRIMARY KEY, account text NOT NULL, amount int NOT NULL)`)

let ledgerDown = true // the first attempt fails after its INSERT, as a crash there would

const app = express()
app.post(
  '/payments',
  // Before express.json(): the middleware fingerprints the raw body and hands the same bytes on.
  idempotency({ store, scope: (req) => req.get('authorization') ?? 'anonymous' }),
  express.json(),
  // Express 4 does not catch a rejected promise: pass the error on with next(error).
  async (req, res, next) => {
    try {
      const { tx, scope } = req.idem as IdempotencyContext<PgClient> // set on the routes idempotency() protects
      const { rows } = await tx.query<{ id: string }>(`INSERT INTO ${schema}.payments (account, amount) VALUES ($1, $2) RETURNING id`, [scope, req.body.amount])
      if (ledgerDown) {
        ledgerDown = false
        throw new Error('the ledger went away')
      }
      res.status(201).json({ paymentId: rows[0].id, amount: req.body.amount })
    } catch (error) {
      next(error)
    }
  },
)
// A 5xx from the error handler is the route's answer: it rolls back and is not stored.
const onError: ErrorRequestHandler = (error: Error, _req, res, _next) => void res.status(500).json({ error: error.message })
app.use(onError)

const server = app.listen(0, '127.0.0.1')
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
