// bench:http: what the Idempotency-Key middleware costs an HTTP route that does one
// INSERT on Postgres, for Hono (on @hono/node-server) and Express, measured with
// autocannon over loopback in one run:
//   unprotected  the route without idem (its INSERT autocommits)
//   unprotected_tx  the same route without idem, its INSERT in a transaction of its own
//                (BEGIN, INSERT, COMMIT): for reference, what a transaction costs by itself
//   fresh        the route behind idem, a new key on every request
//   replay       the route behind idem, retries of keys the fresh runs stored (answered
//                from the store, the route does not run)
// The servers run in a child process so that autocannon does not share their event loop.
// Build first (`npm run build`): this runs over dist/.
import autocannon from 'autocannon'
import { fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { interleaved, ratio } from './support.mjs'

const PG_URL = process.env.IDEM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
// Each variant is measured ROUNDS times for SECONDS, interleaved: ~5 s per variant in all.
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2.5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16)
const POOL_SIZE = 16
const BODY = JSON.stringify({ customer: 'c_42', amount: 1250, currency: 'EUR', items: [{ sku: 'A-1', qty: 2 }] })

if (process.argv[2] === '--serve') await serve()
else await drive()

/** The child: both apps, on ports of their own, over one pool and one schema. */
async function serve() {
  const [{ default: pg }, { Hono }, { serve: serveHono }, { default: express }] = await Promise.all([
    import('pg'),
    import('hono'),
    import('@hono/node-server'),
    import('express'),
  ])
  const { postgresStore } = await import('../dist/stores/postgres/index.js')
  const { idempotency: honoIdempotency } = await import('../dist/http/hono.js')
  const { idempotency: expressIdempotency } = await import('../dist/http/express.js')

  const schema = process.env.BENCH_SCHEMA
  const pool = new pg.Pool({ connectionString: PG_URL, max: POOL_SIZE })
  const store = postgresStore({ pool, schema })
  await store.migrate()
  await pool.query(`CREATE TABLE "${schema}".orders (id bigserial PRIMARY KEY, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
  const insert = (client, body) => client.query(`INSERT INTO "${schema}".orders (body) VALUES ($1) RETURNING id`, [body])
  const scope = (request) => request.headers.get('x-account') ?? 'acct_bench'
  const inTransaction = async (body) => {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      const result = await insert(client, body)
      await client.query('COMMIT')
      return result
    } finally {
      client.release()
    }
  }

  const hono = new Hono()
  hono.post('/plain', async (c) => {
    const { rows } = await insert(pool, await c.req.text())
    return c.json({ id: rows[0].id }, 201)
  })
  hono.post('/plain-tx', async (c) => {
    const { rows } = await inTransaction(await c.req.text())
    return c.json({ id: rows[0].id }, 201)
  })
  hono.use('/idem', honoIdempotency({ store, scope }))
  hono.post('/idem', async (c) => {
    const { rows } = await insert(c.get('idem').tx, await c.req.text())
    return c.json({ id: rows[0].id }, 201)
  })
  const honoServer = serveHono({ fetch: hono.fetch, hostname: '127.0.0.1', port: 0 })
  await new Promise((resolve) => honoServer.once('listening', resolve))

  const app = express()
  app.set('etag', false)
  app.set('x-powered-by', false)
  const text = express.text({ type: () => true })
  app.post('/plain', text, async (req, res) => {
    const { rows } = await insert(pool, req.body)
    res.status(201).json({ id: rows[0].id })
  })
  app.post('/plain-tx', text, async (req, res) => {
    const { rows } = await inTransaction(req.body)
    res.status(201).json({ id: rows[0].id })
  })
  app.post('/idem', expressIdempotency({ store, scope }), text, async (req, res) => {
    const { rows } = await insert(req.idem.tx, req.body)
    res.status(201).json({ id: rows[0].id })
  })
  // When autocannon stops, it drops connections mid-request; those requests fail quietly.
  app.use((_error, _req, res, _next) => res.status(500).end())
  const expressServer = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => expressServer.once('listening', resolve))

  process.on('message', (message) => message === 'cpu' && process.send({ cpu: process.cpuUsage() }))
  process.send({ hono: honoServer.address().port, express: expressServer.address().port })
  process.on('disconnect', () => process.exit(0))
}

/** The parent: starts the child, runs autocannon against each variant, prints ratios. */
async function drive() {
  if (!existsSync(new URL('../dist/http/hono.js', import.meta.url))) {
    console.error('bench:http runs over dist/: run `npm run build` first')
    process.exit(1)
  }
  const { default: pg } = await import('pg')
  const schema = `idem_bench_http_${process.pid}`
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 })
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; CREATE SCHEMA "${schema}"`)
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], { env: { ...process.env, BENCH_SCHEMA: schema } })
  try {
    const ports = await new Promise((resolve, reject) => {
      child.once('message', resolve)
      child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)))
    })
    console.log(`bench:http: ${CONNECTIONS} connections, ${ROUNDS} × ${SECONDS} s per variant, one INSERT per request (pool of ${POOL_SIZE})`)
    const serverCpu = () =>
      new Promise((resolve) => {
        child.once('message', ({ cpu }) => resolve(cpu.user + cpu.system))
        child.send('cpu')
      })
    const results = {}
    for (const adapter of ['hono', 'express']) {
      results[adapter] = await benchAdapter(adapter, `http://127.0.0.1:${ports[adapter]}`, serverCpu)
    }
    for (const adapter of ['hono', 'express']) {
      const { unprotected, unprotected_tx, fresh, replay } = results[adapter]
      ratio(`http.${adapter}.fresh_vs_unprotected`, fresh / unprotected)
      ratio(`http.${adapter}.replay_vs_unprotected`, replay / unprotected)
      ratio(`http.${adapter}.fresh_vs_unprotected_tx`, fresh / unprotected_tx)
    }
  } finally {
    child.disconnect()
    await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve()))
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  }
}

async function benchAdapter(adapter, url, serverCpu) {
  const run = randomUUID().slice(0, 8)
  const headers = { 'content-type': 'application/json' }
  const freshKey = (i) => `"fresh-${run}-${i}"`

  // Fresh requests number their keys; replays cycle through the keys stored so far, as
  // clients retrying their own requests would. (Many clients retrying the *same* key at
  // once would contend on that key's lock: see docs/http.md.)
  let counter = 0
  let replayed = 0
  const variants = {
    unprotected: { path: '/plain', headers },
    unprotected_tx: { path: '/plain-tx', headers },
    fresh: {
      path: '/idem',
      headers,
      // A new key for every request.
      setupRequest: (request) => {
        request.headers = { ...headers, 'idempotency-key': freshKey(counter++) }
        return request
      },
    },
    replay: {
      path: '/idem',
      headers,
      setupRequest: (request) => {
        // Keys whose first request has surely finished: all but the last few issued.
        const stored = Math.max(1, counter - 4 * CONNECTIONS)
        request.headers = { ...headers, 'idempotency-key': freshKey(replayed++ % stored) }
        return request
      },
    },
  }
  const measure = async (variant, name, seconds = SECONDS) => {
    const result = await autocannon({
      url,
      method: 'POST',
      connections: CONNECTIONS,
      duration: seconds,
      body: BODY,
      headers: variant.headers,
      requests: [{ method: 'POST', path: variant.path, body: BODY, headers: variant.headers, ...(variant.setupRequest && { setupRequest: variant.setupRequest }) }],
    })
    const bad = result.non2xx + result.errors + result.timeouts
    if (bad > 0) throw new Error(`${adapter} ${name}: ${bad} of ${result.requests.total} requests failed (non-2xx, errors or timeouts): ${JSON.stringify(result.statusCodeStats)}`)
    return result
  }
  // Warm-up: JIT, pool connections, the planner's caches; and keys for the replays.
  for (const [name, variant] of Object.entries(variants)) await measure(variant, name, 1)
  if (counter < 8 * CONNECTIONS) throw new Error(`${adapter}: only ${counter} keys stored in the warm-up; too few to replay`)

  const latencies = {}
  const cpu = Object.fromEntries(Object.keys(variants).map((name) => [name, { micros: 0, requests: 0 }]))
  const rates = await interleaved(variants, ROUNDS, async (variant, name) => {
    const before = await serverCpu()
    const result = await measure(variant, name)
    cpu[name].micros += (await serverCpu()) - before
    cpu[name].requests += result.requests.total
    latencies[name] = result.latency
    return result.requests.total / result.duration
  })
  for (const [name, rate] of Object.entries(rates)) {
    const { p50, p99 } = latencies[name]
    const perRequest = cpu[name].micros / cpu[name].requests
    console.log(
      `${adapter.padEnd(8)} ${name.padEnd(15)} ${rate.toFixed(0).padStart(6)} req/s   p50 ${String(p50).padStart(2)} ms   p99 ${String(p99).padStart(3)} ms   server CPU ${perRequest.toFixed(0).padStart(4)} µs/req`,
    )
  }
  return rates
}
