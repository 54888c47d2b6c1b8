// bench:http: what the Idempotency-Key middleware costs an HTTP route that does one
// INSERT on Postgres, for Hono (on @hono/node-server), Express and Koa, measured with
// autocannon over loopback in one run:
//   unprotected  the route without idem (its INSERT autocommits)
//   unprotected_tx  the same route without idem, its INSERT in a transaction of its own
//                (BEGIN, INSERT, COMMIT): for reference, what a transaction costs by itself
//   hand_written the route's transaction plus a careful engineer's own key row, no
//                library (bench/hand-written.mjs: the key claimed under an advisory lock,
//                the response stored in the same transaction, prepared statements, the
//                same pool, three round trips): the floor for the transactional mode
//   fresh        the route behind idem, a new key on every request
//   replay       the route behind idem, retries of keys the fresh runs stored (answered
//                from the store, the route does not run), sent to the instance that
//                stored them
//   replay_elsewhere  the same retries sent to a second instance of the app (its own
//                store object, same database), as a load balancer may: the store there
//                has not seen the keys, so it claims them instead of only reading
// Each framework's server runs in a child process of its own, so that autocannon does
// not share its event loop, and so that neither framework's setup weighs on the other
// (@hono/node-server replaces the global Request and Response, which an Express app
// sharing its process would pay for). Build first (`npm run build`): this runs over dist/.
//
// Then the Hono app over MySQL / MariaDB (bench/http-mysql.mjs; left out, and said so,
// when the server is unreachable): idem's middleware on mysqlStore against the same
// route behind the careful hand-written MySQL scheme (bench/hand-written-mysql.mjs).
//
// Then the Hono app again on Bun and on Deno (the dev dependencies; skipped, and said
// so, when one is not installed), on the runtime's own server (`Bun.serve`,
// `Deno.serve`) with the same pool size: `fresh` and `replay` against the same route
// unprotected on that runtime. Information, not a target: the ratio says what idem
// costs there, not how the runtimes compare.
//
// BENCH_ONLY (a comma-separated list of hono, express, koa, mysql, bun, deno) measures
// only those parts.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { locateRuntime } from '../tools/runtimes/runtimes.mjs'
import { keyedVariants, measureVariants, serveParent, startServer, startServerOn } from './autocannon.mjs'
import { fingerprintOf, handWrittenKeys, handWrittenTable } from './hand-written.mjs'
import { benchHonoMysql, serveHonoMysql } from './http-mysql.mjs'
import { ratio } from './support.mjs'

const PG_URL = process.env.IDEM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
// Each variant is measured ROUNDS times for SECONDS, interleaved: ~5 s per variant in all.
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2.5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16)
const POOL_SIZE = 16
const ONLY = process.env.BENCH_ONLY?.split(',')
const wanted = (part) => ONLY === undefined || ONLY.includes(part)
const ADAPTERS = ['hono', 'express', 'koa'].filter(wanted)
const BODY = JSON.stringify({ customer: 'c_42', amount: 1250, currency: 'EUR', items: [{ sku: 'A-1', qty: 2 }] })

if (process.argv[2] === '--serve') await (process.env.BENCH_APP === 'hono-mysql' ? serveHonoMysql(POOL_SIZE) : serve())
else await drive()

/** The child: one app (BENCH_APP, `hono`, `express` or `koa`) over a pool on the schema the parent set up. */
async function serve() {
  const { default: pg } = await import('pg')
  const { postgresStore } = await import('../dist/stores/postgres/index.js')
  const schema = process.env.BENCH_SCHEMA
  const pool = new pg.Pool({ connectionString: PG_URL, max: POOL_SIZE, connectionTimeoutMillis: 10_000 })
  // As the docs ask of every app: an idle connection Postgres drops must not end the bench.
  pool.on('error', (error) => console.error(`idle Postgres connection failed: ${error.message}`))
  const store = postgresStore({ pool, schema })
  const insert = (client, body) => client.query(`INSERT INTO "${schema}".orders (body) VALUES ($1) RETURNING id`, [body])
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
  const hand = handWrittenKeys({ pool, schema })
  /** The hand-written route: the same INSERT, in the transaction that stores the key's row. */
  const handWritten = (scope, key, path, body) =>
    hand.handle({ scope, key, fingerprint: fingerprintOf('POST', path, body) }, async (client) => {
      const { rows } = await insert(client, body)
      return { status: 201, body: JSON.stringify({ id: rows[0].id }) }
    })
  // The account: from a header, as authentication would put it; `scope` reads it from each framework's own request.
  const app = { pool, store, insert, inTransaction, handWritten, account: (header) => header ?? 'acct_bench' }
  const start = { express: serveExpress, koa: serveKoa }[process.env.BENCH_APP] ?? serveHono
  // The second instance: same pool and schema, a store object of its own.
  const port = await start(app)
  const elsewhere = await start({ ...app, store: postgresStore({ pool, schema }) })
  serveParent({ app: port, elsewhere })
}

async function serveHono({ pool, store, insert, inTransaction, handWritten, account }) {
  const [{ Hono }, { idempotency }] = await Promise.all([import('hono'), import('../dist/http/adapters/hono/index.js')])
  const hono = new Hono()
  hono.post('/plain', async (c) => {
    const { rows } = await insert(pool, await c.req.text())
    return c.json({ id: rows[0].id }, 201)
  })
  hono.post('/plain-tx', async (c) => {
    const { rows } = await inTransaction(await c.req.text())
    return c.json({ id: rows[0].id }, 201)
  })
  hono.post('/hand', async (c) => {
    const key = c.req.header('idempotency-key')
    if (key === undefined) return c.json({ error: 'Idempotency-Key is required' }, 400)
    const answer = await handWritten(account(c.req.header('x-account')), key, c.req.path, await c.req.text())
    return c.body(answer.body, answer.status, { 'content-type': 'application/json' })
  })
  hono.use('/idem', idempotency({ store, scope: (c) => account(c.req.header('x-account')) }))
  hono.post('/idem', async (c) => {
    const { rows } = await insert(c.get('idem').tx, await c.req.text())
    return c.json({ id: rows[0].id }, 201)
  })
  return listenHono(hono)
}

/** Serves the app on the runtime's own server: `Bun.serve`, `Deno.serve`, or @hono/node-server on Node. */
async function listenHono(hono) {
  const { Bun, Deno } = globalThis
  if (Bun !== undefined) return Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: hono.fetch }).port
  if (Deno !== undefined) return Deno.serve({ hostname: '127.0.0.1', port: 0, onListen() {} }, hono.fetch).addr.port
  const { serve } = await import('@hono/node-server')
  const server = serve({ fetch: hono.fetch, hostname: '127.0.0.1', port: 0 })
  await new Promise((resolve) => server.once('listening', resolve))
  return server.address().port
}

async function serveExpress({ pool, store, insert, inTransaction, handWritten, account }) {
  const [{ default: express }, { idempotency }] = await Promise.all([import('express'), import('../dist/http/adapters/express/index.js')])
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
  app.post('/hand', text, async (req, res) => {
    const key = req.get('idempotency-key')
    if (key === undefined) return void res.status(400).json({ error: 'Idempotency-Key is required' })
    const answer = await handWritten(account(req.get('x-account')), key, req.path, req.body)
    res.status(answer.status).type('application/json').send(answer.body)
  })
  app.post('/idem', idempotency({ store, scope: (req) => account(req.get('x-account')) }), text, async (req, res) => {
    const { rows } = await insert(req.idem.tx, req.body)
    res.status(201).json({ id: rows[0].id })
  })
  // When autocannon stops, it drops connections mid-request; those requests fail quietly.
  app.use((_error, _req, res, _next) => res.status(500).end())
  const server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  return server.address().port
}

async function serveKoa({ pool, store, insert, inTransaction, handWritten, account }) {
  const [{ default: Koa }, { idempotency }] = await Promise.all([import('koa'), import('../dist/http/adapters/koa/index.js')])
  const app = new Koa()
  // When autocannon stops, it drops connections mid-request; Koa would log each failure.
  app.silent = true
  // The body as a body parser reads it (`ctx.get` answers '' for a header that is absent).
  const text = async (ctx) => {
    const chunks = []
    for await (const chunk of ctx.req) chunks.push(chunk)
    return Buffer.concat(chunks).toString('utf8')
  }
  const created = (ctx, id) => {
    ctx.status = 201
    ctx.body = { id }
  }
  const routes = {
    '/plain': async (ctx) => created(ctx, (await insert(pool, await text(ctx))).rows[0].id),
    '/plain-tx': async (ctx) => created(ctx, (await inTransaction(await text(ctx))).rows[0].id),
    '/hand': async (ctx) => {
      const key = ctx.get('idempotency-key')
      if (key === '') {
        ctx.status = 400
        ctx.body = { error: 'Idempotency-Key is required' }
        return
      }
      const answer = await handWritten(account(ctx.get('x-account') || undefined), key, ctx.path, await text(ctx))
      ctx.status = answer.status
      ctx.type = 'application/json'
      ctx.body = answer.body
    },
    '/idem': async (ctx) => created(ctx, (await insert(ctx.state.idem.tx, await text(ctx))).rows[0].id),
  }
  const protect = idempotency({ store, scope: (ctx) => account(ctx.get('x-account') || undefined) })
  app.use((ctx, next) => (ctx.path === '/idem' ? protect(ctx, next) : next()))
  app.use(async (ctx) => {
    if (ctx.method === 'POST' && routes[ctx.path] !== undefined) await routes[ctx.path](ctx)
  })
  const server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  return server.address().port
}

/** The parent: starts the child, runs autocannon against each variant, prints ratios. */
async function drive() {
  if (!existsSync(new URL('../dist/http/adapters/hono/index.js', import.meta.url))) {
    console.error('bench:http runs over dist/: run `npm run build` first')
    process.exit(1)
  }
  const { default: pg } = await import('pg')
  const schema = `idem_bench_http_${process.pid}`
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1, connectionTimeoutMillis: 10_000 })
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; CREATE SCHEMA "${schema}"`)
  try {
    const { postgresStore } = await import('../dist/stores/postgres/index.js')
    await postgresStore({ pool: admin, schema }).migrate()
    await admin.query(handWrittenTable(schema))
    await admin.query(`CREATE TABLE "${schema}".orders (id bigserial PRIMARY KEY, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
    console.log(`bench:http: ${CONNECTIONS} connections, ${ROUNDS} × ${SECONDS} s per variant, one INSERT per request (pool of ${POOL_SIZE})`)
    const results = {}
    for (const adapter of ADAPTERS) {
      const server = await startServer(fileURLToPath(import.meta.url), { BENCH_SCHEMA: schema, BENCH_APP: adapter })
      try {
        results[adapter] = await benchAdapter(adapter, `http://127.0.0.1:${server.ports.app}`, `http://127.0.0.1:${server.ports.elsewhere}`, server)
      } finally {
        await server.stop()
      }
    }
    for (const adapter of ADAPTERS) {
      const { unprotected, unprotected_tx, fresh, replay_elsewhere } = results[adapter]
      ratio(`http.${adapter}.replay_elsewhere_vs_unprotected`, replay_elsewhere / unprotected)
      ratio(`http.${adapter}.fresh_vs_unprotected_tx`, fresh / unprotected_tx)
      // The ceiling of fresh_vs_unprotected for any design whose route writes commit with
      // the key: the route's own transaction, with no key at all.
      ratio(`http.${adapter}.unprotected_tx_vs_unprotected`, unprotected_tx / unprotected)
    }
    const mysql = wanted('mysql') ? await benchHonoMysql({ script: fileURLToPath(import.meta.url), body: BODY, rounds: ROUNDS, seconds: SECONDS, connections: CONNECTIONS }) : undefined
    const runtimes = {}
    for (const name of ['bun', 'deno'].filter(wanted)) {
      const runtime = locateRuntime(name)
      if (runtime.version === undefined) {
        console.log(`bench:http: ${runtime.label} is not installed, its lines are left out (${runtime.problem}; ${runtime.hint})`)
        continue
      }
      const server = await startServerOn(runtime, fileURLToPath(import.meta.url), { BENCH_SCHEMA: schema, BENCH_APP: 'hono' })
      try {
        runtimes[name] = await benchRuntime(`hono@${name}`, `http://127.0.0.1:${server.ports.app}`, server)
      } finally {
        await server.stop()
      }
    }
    // The measures last.
    for (const adapter of ADAPTERS) {
      const { unprotected, fresh, replay, hand_written } = results[adapter]
      // The floor of the transactional mode: the same transaction with a hand-written key row.
      ratio(`http.${adapter}.fresh_vs_hand_written`, fresh / hand_written)
      ratio(`http.${adapter}.fresh_vs_unprotected`, fresh / unprotected)
      ratio(`http.${adapter}.replay_vs_unprotected`, replay / unprotected)
    }
    if (mysql !== undefined) {
      const { rates, cpu } = mysql
      // The floor of the transactional mode on MySQL: the same route behind the hand-written scheme.
      ratio('http.hono.mysql_fresh_vs_hand_written', rates.fresh / rates.hand_written)
      // CPU per request, the hand-written route's over idem's (above 1: idem costs less), the app's process and the MySQL server's.
      ratio('http.hono.mysql_fresh_vs_hand_written.server_cpu', cpu.hand_written.server / cpu.fresh.server)
      const database = (name) => cpu[name].of('mysql')
      if ((database('fresh') ?? 0) > 0) ratio('http.hono.mysql_fresh_vs_hand_written.mysql_cpu', database('hand_written') / database('fresh'))
      ratio('http.hono.mysql_fresh_vs_unprotected_tx', rates.fresh / rates.unprotected_tx)
      ratio('http.hono.mysql_replay_vs_unprotected_tx', rates.replay / rates.unprotected_tx)
    }
    // Information: idem's Hono middleware against the same route unprotected, on each runtime.
    for (const [name, { unprotected, fresh, replay }] of Object.entries(runtimes)) {
      ratio(`http.${name}.hono.fresh_vs_unprotected`, fresh / unprotected)
      ratio(`http.${name}.hono.replay_vs_unprotected`, replay / unprotected)
    }
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  }
}

/** The Hono app on another runtime: the route unprotected, fresh keys, replays. */
async function benchRuntime(label, url, server) {
  const headers = { 'content-type': 'application/json' }
  const keyed = keyedVariants('/idem', headers, CONNECTIONS)
  return measureVariants({
    label,
    url,
    variants: { unprotected: { path: '/plain', headers }, fresh: keyed.fresh, replay: keyed.replay },
    body: BODY,
    rounds: ROUNDS,
    seconds: SECONDS,
    connections: CONNECTIONS,
    serverCpu: server.serverCpu,
    serverPid: server.pid,
    afterWarmUp: () => {
      if (keyed.issued() < 8 * CONNECTIONS) throw new Error(`${label}: only ${keyed.issued()} keys stored in the warm-up; too few to replay`)
    },
  })
}

async function benchAdapter(adapter, url, elsewhere, server) {
  const headers = { 'content-type': 'application/json' }
  const keyed = keyedVariants('/idem', headers, CONNECTIONS, elsewhere)
  const hand = keyedVariants('/hand', headers, CONNECTIONS)
  const variants = {
    unprotected: { path: '/plain', headers },
    unprotected_tx: { path: '/plain-tx', headers },
    hand_written: hand.fresh,
    fresh: keyed.fresh,
    replay: keyed.replay,
    replay_elsewhere: keyed.replay_elsewhere,
  }
  return measureVariants({
    label: adapter,
    url,
    variants,
    body: BODY,
    rounds: ROUNDS,
    seconds: SECONDS,
    connections: CONNECTIONS,
    serverCpu: server.serverCpu,
    serverPid: server.pid,
    afterWarmUp: () => {
      if (keyed.issued() < 8 * CONNECTIONS) throw new Error(`${adapter}: only ${keyed.issued()} keys stored in the warm-up; too few to replay`)
    },
  })
}
