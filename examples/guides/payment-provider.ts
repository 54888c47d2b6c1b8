// Calling a payment provider from a handler, in leased mode: the charge is a step whose
// result is saved before the handler goes on, and the provider gets a key derived from
// ours, so a retry after a crash resumes instead of charging again. The example runs the
// API in a child process and kills it twice, at the two worst moments.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --experimental-strip-types examples/guides/payment-provider.ts
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import pg from 'pg'
import { createLeasedIdem, type StepContext } from 'idem'
import { idempotency, type IdemVariables } from 'idem/hono'
import { leasedPostgresStore } from 'idem/postgres'

function newPool() {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
  pool.on('error', (error) => console.warn(error)) // an idle connection that dies must not end the process
  return pool
}

/** What the API process is started with: where its tables and the provider are, and where it dies. */
interface ApiConfig {
  schema: string
  providerUrl: string
  crash: 'after-provider' | 'after-charge-step' | 'none'
}

/** A charge, as the provider answers it. */
interface Charge {
  id: string
  amount: number
}

/** The API process: `node payment-provider.ts api '<config>'`. */
async function api({ schema, providerUrl, crash }: ApiConfig): Promise<void> {
  const pool = newPool()
  // A short lease, so that a retry takes over from a dead holder after half a second.
  const idem = createLeasedIdem({ store: leasedPostgresStore({ pool, schema }), leaseMs: 500 })
  const app = new Hono<{ Variables: IdemVariables<StepContext> }>()
  // waitMs: a retry that finds the dead holder's lease waits for it to run out, then takes over.
  app.use('/payments', idempotency({ idem, scope: (c) => c.req.header('authorization') ?? 'anonymous', waitMs: 5_000 }))
  app.post('/payments', async (c) => {
    const { amount } = await c.req.json<{ amount: number }>()
    const { tx: ctx } = c.get('idem')! // in leased mode, the step context
    const charge = await ctx.step('charge', async (signal) => {
      const response = await fetch(`${providerUrl}/charges`, {
        method: 'POST',
        headers: { 'idempotency-key': ctx.derive('charge'), 'content-type': 'application/json' },
        body: JSON.stringify({ amount }),
        signal,
      })
      const charged: Charge = await response.json()
      if (crash === 'after-provider') process.kill(process.pid, 'SIGKILL') // charged, but the step is not saved
      return charged
    })
    if (crash === 'after-charge-step') process.kill(process.pid, 'SIGKILL') // the charge is saved, the payment row is not
    await ctx.step('record', async () => {
      // Outside any transaction of idem's, so the write is idempotent by itself.
      await pool.query(
        `INSERT INTO ${schema}.payments (payment_key, charge_id, amount) VALUES ($1, $2, $3) ON CONFLICT (payment_key) DO NOTHING`,
        [ctx.derive('payment'), charge.id, amount],
      )
      return { recorded: true }
    })
    return c.json({ chargeId: charge.id, amount }, 201)
  })
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await once(server, 'listening')
  console.log(`listening ${(server.address() as AddressInfo).port}`)
}

/** Starts the API in a process of its own and resolves with its port once it listens. */
async function startApi(config: ApiConfig) {
  // process.execArgv: the child runs as this process does (with --experimental-strip-types, say).
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), 'api', JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  for await (const line of createInterface({ input: child.stdout })) {
    if (line.startsWith('listening ')) return { port: Number(line.slice('listening '.length)), child, exited }
  }
  throw new Error('the API process ended before it listened')
}

async function main() {
  const pool = newPool()
  const schema = `guide_provider_${randomBytes(4).toString('hex')}`
  await pool.query(`CREATE SCHEMA ${schema}`)
  await leasedPostgresStore({ pool, schema }).migrate()
  await pool.query(`CREATE TABLE ${schema}.payments (payment_key text PRIMARY KEY, charge_id text NOT NULL, amount int NOT NULL)`)

  // The fake provider dedupes on its Idempotency-Key, as real ones do, and counts what it sees.
  const charges = new Map<string, Charge>()
  let requests = 0
  const provider = createServer(async (req, res) => {
    requests++
    let body = ''
    for await (const chunk of req) body += chunk
    const key = String(req.headers['idempotency-key'])
    if (!charges.has(key)) charges.set(key, { id: `ch_${charges.size + 1}`, amount: JSON.parse(body).amount })
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(charges.get(key)))
  })
  provider.listen(0, '127.0.0.1')
  await once(provider, 'listening')
  const providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`

  const pay = (port: number) =>
    fetch(`http://127.0.0.1:${port}/payments`, {
      method: 'POST',
      headers: { authorization: 'Bearer acct_42', 'idempotency-key': '"pay-1"', 'content-type': 'application/json' },
      body: JSON.stringify({ amount: 1500 }),
    })
  let api: Awaited<ReturnType<typeof startApi>> | undefined
  try {
    // Each attempt reaches a new API process, as after a restart.
    for (const [attempt, crash] of [[1, 'after-provider'], [2, 'after-charge-step'], [3, 'none']] as const) {
      api = await startApi({ schema, providerUrl, crash })
      try {
        const response = await pay(api.port)
        console.log(`attempt ${attempt}: ${response.status} ${await response.text()}`)
      } catch (error) {
        if (crash === 'none') throw error
        console.log(`attempt ${attempt}: no answer, the API process died (${crash})`)
        await api.exited
      }
    }
    if (api === undefined) throw new Error('no API process was started')
    const replay = await pay(api.port)
    console.log(`attempt 4: ${replay.status}${replay.headers.get('idempotent-replayed') === 'true' ? ' (replayed)' : ''} ${await replay.text()}`)
    console.log(`the provider saw ${requests} requests and made ${charges.size} charge`)
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.payments`)
    console.log(`payments in the table: ${rows[0].n}`)
  } finally {
    api?.child.kill()
    provider.close()
    await pool.query(`DROP SCHEMA ${schema} CASCADE`)
    await pool.end()
  }
}

if (process.argv[2] === 'api') await api(JSON.parse(process.argv[3]))
else await main()
