// bench:soak: does the server's memory stay flat under a long run of fresh requests?
// SOAK_REQUESTS fresh requests (1,000,000 by default; a new Idempotency-Key each) go
// through the Hono adapter (idem/hono on @hono/node-server, in a child process started
// with --expose-gc) on each store:
//   postgres  the transactional engine on postgresStore; the route does one INSERT in
//             the request's transaction (1,000,000 requests leave that many rows and
//             key records in the bench's schema, dropped at the end)
//   redis     the leased engine on redisStore; the route answers at once (no database),
//             outcomes kept SOAK_REDIS_TTL_MS (60 s) so Redis holds only the last minute's
// After a warm-up (SOAK_WARM_UP requests) and after the run the child collects garbage
// and reports its RSS and heap; in between, SOAK_SAMPLES readings show the trend. Ends
// with `RATIO soak.<store>.rss_growth` = RSS after the run / RSS after the warm-up
// (target ≤ 1.10). Build first (`npm run build`): this runs over dist/.
import autocannon from 'autocannon'
import { fork } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dropRedisKeys, ratio } from './support.mjs'

const REQUESTS = Number(process.env.SOAK_REQUESTS ?? 1_000_000)
const WARM_UP = Number(process.env.SOAK_WARM_UP ?? Math.min(50_000, Math.max(1_000, Math.round(REQUESTS / 10))))
const SAMPLES = Number(process.env.SOAK_SAMPLES ?? 10)
const CONNECTIONS = Number(process.env.SOAK_CONNECTIONS ?? 16)
const STORES = (process.env.SOAK_STORES ?? 'postgres,redis').split(',')
const REDIS_TTL_MS = Number(process.env.SOAK_REDIS_TTL_MS ?? 60_000)
const PG_URL = process.env.IDEM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.IDEM_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const BODY = JSON.stringify({ customer: 'c_42', amount: 1250, currency: 'EUR', items: [{ sku: 'A-1', qty: 2 }] })

const loopback = (url) => /^[a-z]+:\/\/([^@/]*@)?(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/.*)?$/.test(url)
if (!loopback(PG_URL) || !loopback(REDIS_URL)) throw new Error('bench:soak runs against a loopback Postgres and Redis only')

if (process.argv[2] === '--serve') await serve()
else await drive()

/** The child: one Hono app on one store (SOAK_STORE). */
async function serve() {
  const [{ Hono }, { serve: serveHono }, { idempotency }] = await Promise.all([import('hono'), import('@hono/node-server'), import('../dist/http/adapters/hono/index.js')])
  const schema = process.env.SOAK_SCHEMA
  const closers = []
  const app = new Hono()
  if (process.env.SOAK_STORE === 'postgres') {
    const { default: pg } = await import('pg')
    const { postgresStore } = await import('../dist/stores/postgres/index.js')
    const pool = new pg.Pool({ connectionString: PG_URL, max: 16, connectionTimeoutMillis: 10_000 })
    // As the docs ask of every app: an idle connection Postgres drops must not end the bench.
    pool.on('error', (error) => console.error(`idle Postgres connection failed: ${error.message}`))
    closers.push(() => pool.end())
    app.use('/orders', idempotency({ store: postgresStore({ pool, schema }), scope: () => 'acct_soak' }))
    app.post('/orders', async (c) => {
      const { rows } = await c.get('idem').tx.query(`INSERT INTO "${schema}".orders (body) VALUES ($1) RETURNING id`, [await c.req.text()])
      return c.json({ id: rows[0].id }, 201)
    })
  } else {
    const { Redis } = await import('ioredis')
    const { createLeasedIdem } = await import('../dist/index.js')
    const { redisStore } = await import('../dist/stores/redis/index.js')
    const client = new Redis(REDIS_URL)
    closers.push(() => client.quit())
    const idem = createLeasedIdem({ store: redisStore({ client, prefix: process.env.SOAK_PREFIX }), ttlMs: REDIS_TTL_MS })
    let orders = 0
    app.use('/orders', idempotency({ idem, scope: () => 'acct_soak' }))
    app.post('/orders', async (c) => {
      const order = await c.req.json()
      return c.json({ id: ++orders, amount: order.amount }, 201)
    })
  }
  const server = serveHono({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 })
  await new Promise((resolve) => server.once('listening', resolve))
  process.on('message', (message) => {
    if (message !== 'memory') return
    // Twice: the first collection's finalisers may free more for the second.
    globalThis.gc()
    globalThis.gc()
    const { rss, heapUsed, external } = process.memoryUsage()
    process.send({ memory: { rss, heapUsed, external } })
  })
  process.on('disconnect', async () => {
    setTimeout(() => process.exit(0), 1_000).unref()
    server.close()
    await Promise.allSettled(closers.map((close) => close()))
    process.exit(0)
  })
  process.send({ port: server.address().port })
}

/** The parent: for each store, starts the child, sends the requests, reads memory. */
async function drive() {
  if (!existsSync(new URL('../dist/http/adapters/hono/index.js', import.meta.url))) {
    console.error('bench:soak runs over dist/: run `npm run build` first')
    process.exit(1)
  }
  console.log(
    `bench:soak: ${REQUESTS.toLocaleString('en')} fresh requests per store after ${WARM_UP.toLocaleString('en')} of warm-up; ` +
      `Hono on @hono/node-server; ${CONNECTIONS} connections; stores: ${STORES.join(', ')}`,
  )
  const growth = {}
  for (const store of STORES) growth[store] = await soak(store)
  for (const [store, value] of Object.entries(growth)) ratio(`soak.${store}.rss_growth`, value)
}

function mb(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

async function soak(store) {
  const schema = `idem_bench_soak_${process.pid}`
  const prefix = `idem-bench-soak-${process.pid}:`
  const cleanUp = await setUp(store, schema)
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: ['--expose-gc'],
    env: { ...process.env, SOAK_STORE: store, SOAK_SCHEMA: schema, SOAK_PREFIX: prefix },
  })
  try {
    const { port } = await new Promise((resolve, reject) => {
      child.once('message', resolve)
      child.once('exit', (code) => reject(new Error(`bench:soak server exited with ${code}`)))
    })
    const memory = () =>
      new Promise((resolve) => {
        const answer = (message) => {
          if (message?.memory === undefined) return
          child.off('message', answer)
          resolve(message.memory)
        }
        child.on('message', answer)
        child.send('memory')
      })
    let issued = 0
    let failed = 0
    const send = async (amount) => {
      const result = await autocannon({
        url: `http://127.0.0.1:${port}`,
        connections: CONNECTIONS,
        amount,
        requests: [
          {
            method: 'POST',
            path: '/orders',
            body: BODY,
            setupRequest: (request) => {
              request.headers = { 'content-type': 'application/json', 'idempotency-key': `"soak-${process.pid}-${issued++}"` }
              return request
            },
          },
        ],
      })
      failed += result.non2xx + result.errors + result.timeouts
      return result
    }
    await send(WARM_UP)
    const warm = await memory()
    console.log(`${store.padEnd(8)}   after warm-up  rss ${mb(warm.rss).padStart(9)}   heap ${mb(warm.heapUsed).padStart(8)}`)
    const started = performance.now()
    let sent = 0
    for (let sample = 1; sample <= SAMPLES; sample++) {
      const amount = Math.round((REQUESTS * sample) / SAMPLES) - sent
      const chunkStarted = performance.now()
      const result = await send(amount)
      const rate = result.requests.total / ((performance.now() - chunkStarted) / 1000)
      sent += amount
      const now = await memory()
      console.log(
        `${store.padEnd(8)} ${sent.toLocaleString('en').padStart(9)} requests  rss ${mb(now.rss).padStart(9)}   heap ${mb(now.heapUsed).padStart(8)}   ` +
          `${rate.toFixed(0).padStart(5)} req/s`,
      )
    }
    const after = await memory()
    const seconds = (performance.now() - started) / 1000
    console.log(
      `${store.padEnd(8)}   after the run  rss ${mb(after.rss).padStart(9)}   heap ${mb(after.heapUsed).padStart(8)}   ` +
        `(${(after.rss / warm.rss).toFixed(3)}× and ${(after.heapUsed / warm.heapUsed).toFixed(3)}× the warm-up's; ${seconds.toFixed(0)} s; ${failed} non-2xx or errors)`,
    )
    return after.rss / warm.rss
  } finally {
    if (child.exitCode === null) {
      child.disconnect()
      await new Promise((resolve) => child.once('exit', resolve))
    }
    await cleanUp(prefix)
  }
}

/** The store's schema (Postgres) or nothing (Redis); resolves with what removes it all. */
async function setUp(store, schema) {
  if (store === 'postgres') {
    const { default: pg } = await import('pg')
    const { postgresStore } = await import('../dist/stores/postgres/index.js')
    const admin = new pg.Pool({ connectionString: PG_URL, max: 1, connectionTimeoutMillis: 10_000 })
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; CREATE SCHEMA "${schema}"`)
    await postgresStore({ pool: admin, schema }).migrate()
    await admin.query(`CREATE TABLE "${schema}".orders (id bigserial PRIMARY KEY, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
    return async () => {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await admin.end()
    }
  }
  if (store !== 'redis') throw new Error(`bench:soak: unknown store ${store} (postgres, redis)`)
  return async (prefix) => {
    const { Redis } = await import('ioredis')
    const client = new Redis(REDIS_URL)
    await dropRedisKeys(client, prefix)
    client.disconnect()
  }
}
