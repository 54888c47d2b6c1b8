// The payments API of the Postgres guide with idem's keys in Redis: the route gets a step
// context instead of a transaction, and the payment row no longer commits with the key,
// so the write has to be idempotent by itself. The plain INSERT beside it shows why.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379 node --experimental-strip-types examples/guides/redis-keys.ts
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { Redis } from 'ioredis'
import pg from 'pg'
import { createLeasedIdem, type StepContext } from 'idem'
import { idempotency, type IdemVariables } from 'idem/hono'
import { redisStore } from 'idem/redis'

const suffix = randomBytes(4).toString('hex')
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 })
const prefix = `guide:redis-keys:${suffix}:` // a prefix of its own, so that runs side by side never meet
const idem = createLeasedIdem({ store: redisStore({ client: redis, prefix, timeoutMs: 1_000 }) })

// The business data stays in Postgres; only idem's keys move.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
const schema = `guide_redis_${suffix}`
await pool.query(`CREATE SCHEMA ${schema}`)
await pool.query(`CREATE TABLE ${schema}.payments (id bigserial PRIMARY KEY, payment_key text UNIQUE NOT NULL, account text NOT NULL, amount int NOT NULL)`)
await pool.query(`CREATE TABLE ${schema}.ledger (account text NOT NULL, amount int NOT NULL)`)

let ledgerDown = true // the first attempt fails after its writes, as a crash there would

const app = new Hono<{ Variables: IdemVariables<StepContext> }>()
app.use('/payments', idempotency({ idem, scope: (c) => c.req.header('authorization') ?? 'anonymous' }))
app.post('/payments', async (c) => {
  const { amount } = await c.req.json<{ amount: number }>()
  const { tx: ctx, scope } = c.get('idem')! // the step context: there is no transaction to write through
  // Keyed by the request's derived key: a retry that runs again lands on the same row.
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO ${schema}.payments (payment_key, account, amount) VALUES ($1, $2, $3)
     ON CONFLICT (payment_key) DO UPDATE SET amount = excluded.amount RETURNING id`,
    [ctx.derive('payment'), scope, amount],
  )
  // Written as in the Postgres guide: with no transaction around it, a failed attempt's row stays.
  await pool.query(`INSERT INTO ${schema}.ledger (account, amount) VALUES ($1, $2)`, [scope, amount])
  if (ledgerDown) {
    ledgerDown = false
    throw new Error('the ledger went away')
  }
  return c.json({ paymentId: rows[0].id, amount }, 201)
})
app.onError((error, c) => c.json({ error: error.message }, 500))

const count = async (table: string) => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.${table}`)).rows[0].n
async function keysInRedis(): Promise<string[]> {
  const keys: string[] = []
  let cursor = '0'
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    keys.push(...batch)
  } while (cursor !== '0')
  return keys
}

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
    const body = await response.text()
    console.log(`${response.status}${replayed} ${response.status === 422 ? JSON.parse(body).code : body}`)
  }
  console.log(`payments (upsert by key): ${await count('payments')}; ledger (plain INSERT): ${await count('ledger')}`)
  const keys = await keysInRedis()
  const hours = Math.round((await redis.pttl(keys[0])) / 3_600_000)
  console.log(`keys in Redis: ${keys.length}, expiring in ${hours} h`)
} finally {
  server.close()
  const keys = await keysInRedis()
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
