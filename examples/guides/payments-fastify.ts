// The same payments API on Fastify 5 and Postgres: the payment row is written in the
// transaction that records the Idempotency-Key.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --experimental-strip-types examples/guides/payments-fastify.ts
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import pg from 'pg'
import { idempotency, type IdempotencyContext } from 'idem/fastify'
import { postgresStore, type PgClient } from 'idem/postgres'

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
const schema = `guide_pay_fastify_${randomBytes(4).toString('hex')}`
await pool.query(`CREATE SCHEMA ${schema}`)
const store = postgresStore({ pool, schema })
await store.migrate()
await pool.query(`CREATE TABLE ${schema}.payments (id bigserial PRIMARY KEY, account text NOT NULL, amount int NOT NULL)`)

let ledgerDown = true // the first attempt fails after its INSERT, as a crash there would

const app = Fastify()
// Registered before the routes it protects, in the context that holds them.
await app.register(idempotency({ store, scope: (request) => request.headers.authorization ?? 'anonymous' }))
app.post<{ Body: { amount: number } }>('/payments', async (request, reply) => {
  const { tx, scope } = request.idem as IdempotencyContext<PgClient> // set on the routes the plugin protects
  const { rows } = await tx.query<{ id: string }>(`INSERT INTO ${schema}.payments (account, amount) VALUES ($1, $2) RETURNING id`, [scope, request.body.amount])
  if (ledgerDown) {
    ledgerDown = false
    throw new Error('the ledger went away')
  }
  return reply.code(201).send({ paymentId: rows[0].id, amount: request.body.amount })
})
app.setErrorHandler((error: Error, _request, reply) => reply.code(500).send({ error: error.message }))

await app.listen({ port: 0, host: '127.0.0.1' })
const { port } = app.server.address() as AddressInfo
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
  await app.close()
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
