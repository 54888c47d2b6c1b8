// One bench:peers server: one framework (PEERS_FRAMEWORK: express4, express5, hono) and
// one variant (PEERS_VARIANT), forked by peers.mjs, each in its own process. Every
// variant serves POST /orders, whose route does one INSERT on Postgres and answers 201
// { id }; GET /health answers 200 (to open connections before a burst).
// The peers come from this folder's node_modules; idem from the repository's dist/;
// pg, ioredis, hono and @hono/node-server from the repository's own node_modules.
//
// For the scenarios: a request with `x-bench-ref` is counted (runs per ref, read over
// IPC), and with PEERS_CRASH_REF set the route SIGKILLs its own process right after
// the INSERT of the request carrying that ref.
import pg from 'pg'
import { fingerprintOf, handWrittenKeys } from '../hand-written.mjs'

const {
  PEERS_FRAMEWORK: framework,
  PEERS_VARIANT: variant,
  PEERS_SCHEMA: schema,
  PEERS_PREFIX: prefix,
  PEERS_CRASH_REF: crashRef,
  PEERS_PG_URL: pgUrl,
  PEERS_REDIS_URL: redisUrl,
} = process.env
const POOL_SIZE = Number(process.env.PEERS_POOL_SIZE ?? 16)
const SCOPE = 'acct_bench'
// What Powertools reads from the Lambda context: the in-progress record's expiry, i.e. its lease.
const POWERTOOLS_LEASE_MS = Number(process.env.PEERS_POWERTOOLS_LEASE_MS ?? 5_000)

// Connections close after 2 s idle: every variant has its own process and pool, more
// than Postgres's max_connections if all stayed open, and only one variant runs at a time.
const pool = new pg.Pool({ connectionString: pgUrl, max: POOL_SIZE, idleTimeoutMillis: 2_000, connectionTimeoutMillis: 10_000 })
// An idle connection Postgres drops must not end the server (and idem warns about a pool without this).
pool.on('error', (error) => console.error(`${framework}.${variant}: idle Postgres connection failed: ${error.message}`))
const INSERT = `INSERT INTO "${schema}".orders (body) VALUES ($1) RETURNING id`
// The effect as the leased docs prescribe: keyed by an id derived from the idempotency key, upserted.
const UPSERT =
  `INSERT INTO "${schema}".orders_keyed (effect_key, body) VALUES ($1, $2) ` +
  'ON CONFLICT (effect_key) DO UPDATE SET effect_key = EXCLUDED.effect_key RETURNING id'

const runs = new Map()
/** Counts a scenario request's run of the route (requests without a ref cost one header lookup). */
function counted(ref) {
  if (ref !== undefined) runs.set(ref, (runs.get(ref) ?? 0) + 1)
}
/** The crash of the crash scenario: after the INSERT, before anything is stored or answered. */
function crashPoint(ref) {
  if (crashRef !== undefined && ref === crashRef) process.kill(process.pid, 'SIGKILL')
}
async function insertOrder(db, body, ref) {
  counted(ref)
  const { rows } = await db.query(INSERT, [body])
  crashPoint(ref)
  return { id: rows[0].id }
}
async function upsertOrder(db, effectKey, body, ref) {
  counted(ref)
  const { rows } = await db.query(UPSERT, [effectKey, body])
  crashPoint(ref)
  return { id: rows[0].id }
}

const closers = [() => pool.end()]

// ---- Express 4 and 5 ----

async function serveExpress() {
  const { default: express } = await import(framework === 'express4' ? 'express4' : 'express5')
  const app = express()
  app.set('etag', false)
  app.set('x-powered-by', false)
  const json = express.json()
  const ref = (req) => req.headers['x-bench-ref']
  app.get('/health', (_req, res) => res.status(200).end())
  await expressVariants[variant](app, { express, json, ref })
  // Errors the variants pass on (express-idempotency answers 409 and 417 this way); and
  // the requests autocannon drops mid-flight when it stops.
  app.use((error, _req, res, _next) => {
    if (res.headersSent) return void res.end()
    res.status(res.statusCode >= 400 ? res.statusCode : 500).json({ error: String(error?.message ?? error) })
  })
  return listen(app.listen(0, '127.0.0.1'))
}

/** Express 4 does not catch a rejected async handler: every route goes through this. */
const handler = (fn) => (req, res, next) => fn(req, res, next).catch(next)

const expressVariants = {
  async unprotected(app, { json, ref }) {
    app.post('/orders', json, handler(async (req, res) => res.status(201).json(await insertOrder(pool, req.body, ref(req)))))
  },

  async hand_written(app, { json, ref }) {
    const hand = handWrittenKeys({ pool, schema })
    app.post(
      '/orders',
      json,
      handler(async (req, res) => {
        const key = req.get('idempotency-key')
        if (key === undefined) return void res.status(400).json({ error: 'Idempotency-Key is required' })
        const fingerprint = fingerprintOf(req.method, req.path, JSON.stringify(req.body))
        const answer = await hand.handle({ scope: SCOPE, key, fingerprint }, async (client) => ({
          status: 201,
          body: JSON.stringify(await insertOrder(client, req.body, ref(req))),
        }))
        res.status(answer.status).type('application/json').send(answer.body)
      }),
    )
  },

  async idem_pg(app, { json, ref }) {
    const { idempotency } = await import('../../dist/http/express.js')
    const { postgresStore } = await import('../../dist/stores/postgres/index.js')
    const store = postgresStore({ pool, schema })
    app.post(
      '/orders',
      idempotency({ store, scope: () => SCOPE }),
      json,
      handler(async (req, res) => res.status(201).json(await insertOrder(req.idem.tx, req.body, ref(req)))),
    )
  },

  async idem_redis(app, { json, ref }) {
    const idem = await leasedIdem()
    const { idempotency } = await import('../../dist/http/express.js')
    app.post('/orders', idempotency({ idem, scope: () => SCOPE }), json, handler(async (req, res) => res.status(201).json(await insertOrder(pool, req.body, ref(req)))))
  },

  // The same as idem_redis on a client without enableAutoPipelining (ioredis' default):
  // what the recommendation in docs/leased.md is worth.
  async idem_redis_plain_client(app, { json, ref }) {
    const idem = await leasedIdem({ enableAutoPipelining: false })
    const { idempotency } = await import('../../dist/http/express.js')
    app.post('/orders', idempotency({ idem, scope: () => SCOPE }), json, handler(async (req, res) => res.status(201).json(await insertOrder(pool, req.body, ref(req)))))
  },

  async idem_redis_prescribed(app, { json, ref }) {
    const idem = await leasedIdem()
    const { idempotency } = await import('../../dist/http/express.js')
    app.post(
      '/orders',
      idempotency({ idem, scope: () => SCOPE }),
      json,
      handler(async (req, res) => res.status(201).json(await upsertOrder(pool, req.idem.tx.derive('order'), req.body, ref(req)))),
    )
  },

  // @node-idempotency/core, glued to Express as its README describes (onRequest before
  // the route, onResponse after it; @node-idempotency/express is not on the npm
  // registry), with its Redis storage adapter; errors mapped to statuses as the
  // library's own nestjs wrapper maps them.
  async node_idempotency(app, { json, ref }) {
    const { Idempotency, IdempotencyError } = await import('@node-idempotency/core')
    const { RedisStorageAdapter } = await import('@node-idempotency/storage-adapter-redis')
    const storage = new RedisStorageAdapter({ url: redisUrl })
    await storage.connect()
    closers.push(() => storage.disconnect())
    const idempotency = new Idempotency(storage, { cacheKeyPrefix: `${prefix}node-idempotency` })
    const STATUS = { IDEMPOTENCY_FINGERPRINT_MISSMATCH: 422, IDEMPOTENCY_KEY_LEN_EXEEDED: 400, IDEMPOTENCY_KEY_MISSING: 400, REQUEST_IN_PROGRESS: 409 }
    app.post(
      '/orders',
      json,
      handler(async (req, res) => {
        const request = { headers: req.headers, body: req.body, path: req.originalUrl, method: req.method }
        let cached
        try {
          cached = await idempotency.onRequest(request)
        } catch (error) {
          if (!(error instanceof IdempotencyError)) throw error
          if (error.code === 'REQUEST_IN_PROGRESS') res.set('retry-after', '1')
          return void res.status(STATUS[error.code] ?? 500).json({ error: error.message })
        }
        if (cached !== undefined) return void res.status(cached.additional.status).set('idempotent-replayed', 'true').json(cached.body)
        const body = await insertOrder(pool, req.body, ref(req))
        await idempotency.onResponse(request, { body, additional: { status: 201 } })
        res.status(201).json(body)
      }),
    )
  },

  // @node-idempotency/nestjs's interceptor without a Nest application: constructed as
  // Nest's injector would (Reflector, storage, options) and called with the two things
  // it uses of Nest, an ExecutionContext (switchToHttp, getHandler, getClass) and a
  // CallHandler (handle() → Observable of the route's result). The route then does what
  // Nest's router does around interceptors: status set before (201, Nest's default for
  // POST), the Observable's last value awaited and sent as JSON, HttpExceptions sent
  // with their status. What is measured is the interceptor, not Nest's own router.
  async nestjs(app, { json, ref }) {
    await import('reflect-metadata')
    const { Reflector } = await import('@nestjs/core')
    const { HttpException } = await import('@nestjs/common')
    const { from, lastValueFrom } = await import('rxjs')
    const { NodeIdempotencyInterceptor, buildStorageAdapter } = await import('@node-idempotency/nestjs')
    const storage = await buildStorageAdapter({ adapter: 'redis', options: { url: redisUrl } })
    closers.push(() => storage.disconnect())
    const interceptor = new NodeIdempotencyInterceptor(new Reflector(), storage, { cacheKeyPrefix: `${prefix}nestjs` })
    class OrdersController {}
    const createOrder = (req) => insertOrder(pool, req.body, ref(req))
    app.post(
      '/orders',
      json,
      handler(async (req, res) => {
        res.status(201)
        const context = {
          switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
          getHandler: () => createOrder,
          getClass: () => OrdersController,
        }
        try {
          const result = await lastValueFrom(await interceptor.intercept(context, { handle: () => from(createOrder(req)) }))
          res.json(await result)
        } catch (error) {
          if (!(error instanceof HttpException)) throw error
          res.status(error.getStatus()).json({ error: error.message })
        }
      }),
    )
  },

  // express-idempotency with its Redis adapter, as its README shows: the middleware after
  // the body parser (it compares bodies), the route checking isHit.
  async express_idempotency(app, { json, ref }) {
    const { idempotency, getSharedIdempotencyService } = await import('express-idempotency')
    // A CommonJS module whose export is `exports.default`.
    const adapterModule = await import('express-idempotency-redis-adapter')
    const RedisAdapter = adapterModule.default.default ?? adapterModule.default
    const dataAdapter = new RedisAdapter({ connectionConfig: { url: redisUrl } })
    await dataAdapter.connect()
    closers.push(() => dataAdapter.disconnect())
    app.post(
      '/orders',
      json,
      idempotency({ dataAdapter }),
      handler(async (req, res) => {
        if (getSharedIdempotencyService().isHit(req)) return
        res.status(201).json(await insertOrder(pool, req.body, ref(req)))
      }),
    )
  },

  // Powertools for AWS Lambda's idempotency outside Lambda: makeIdempotent over a
  // function (event, context), its Redis persistence layer (CachePersistenceLayer with a
  // connected @redis/client), the key taken from the event's `key` (the header). The
  // body is not validated by default: with payloadValidationJmesPath, 2.35.0's Redis layer
  // answers every retry of a completed key as a mismatch (its update of the record on
  // completion drops the validation hash), so the same key with another body gets the
  // stored result; PEERS_POWERTOOLS_VALIDATE=1 turns validation on to see it. Outside
  // Lambda the in-progress record has
  // no expiry unless a context gives the remaining time: the fake context below gives
  // POWERTOOLS_LEASE_MS, which is the lease after which a crashed call's key is taken over.
  async powertools(app, { json, ref }) {
    const { makeIdempotent, IdempotencyConfig, IdempotencyAlreadyInProgressError, IdempotencyValidationError } = await import('@aws-lambda-powertools/idempotency')
    const { CachePersistenceLayer } = await import('@aws-lambda-powertools/idempotency/cache')
    const { createClient } = await import('@redis/client')
    const client = await createClient({ url: redisUrl }).connect()
    closers.push(() => client.quit())
    const persistenceStore = new CachePersistenceLayer({ client })
    const validate = process.env.PEERS_POWERTOOLS_VALIDATE === '1'
    const config = new IdempotencyConfig({ eventKeyJmesPath: 'key', ...(validate && { payloadValidationJmesPath: 'body' }) })
    const lambdaContext = { functionName: 'orders', getRemainingTimeInMillis: () => POWERTOOLS_LEASE_MS }
    const createOrder = makeIdempotent(async (event) => insertOrder(pool, event.body, event.ref), { persistenceStore, config, keyPrefix: `${prefix}powertools` })
    app.post(
      '/orders',
      json,
      handler(async (req, res) => {
        const key = req.get('idempotency-key')
        if (key === undefined) return void res.status(400).json({ error: 'Idempotency-Key is required' })
        try {
          res.status(201).json(await createOrder({ key, body: req.body, ref: ref(req) }, lambdaContext))
        } catch (error) {
          if (error instanceof IdempotencyAlreadyInProgressError) return void res.status(409).set('retry-after', '1').json({ error: error.message })
          if (error instanceof IdempotencyValidationError) return void res.status(422).json({ error: error.message })
          throw error
        }
      }),
    )
  },
}

// ---- Hono (idem only) ----

async function serveHono() {
  const [{ Hono }, { serve }] = await Promise.all([import('hono'), import('@hono/node-server')])
  const app = new Hono()
  app.get('/health', (c) => c.body(null, 200))
  const ref = (c) => c.req.header('x-bench-ref')
  const { idempotency } = await import('../../dist/http/hono.js')
  const routes = {
    unprotected: () => app.post('/orders', async (c) => c.json(await insertOrder(pool, await c.req.text(), ref(c)), 201)),
    hand_written: () => {
      const hand = handWrittenKeys({ pool, schema })
      app.post('/orders', async (c) => {
        const key = c.req.header('idempotency-key')
        if (key === undefined) return c.json({ error: 'Idempotency-Key is required' }, 400)
        const body = await c.req.text()
        const answer = await hand.handle({ scope: SCOPE, key, fingerprint: fingerprintOf('POST', c.req.path, body) }, async (client) => ({
          status: 201,
          body: JSON.stringify(await insertOrder(client, body, ref(c))),
        }))
        return c.body(answer.body, answer.status, { 'content-type': 'application/json' })
      })
    },
    idem_pg: async () => {
      const { postgresStore } = await import('../../dist/stores/postgres/index.js')
      app.use('/orders', idempotency({ store: postgresStore({ pool, schema }), scope: () => SCOPE }))
      app.post('/orders', async (c) => c.json(await insertOrder(c.get('idem').tx, await c.req.text(), ref(c)), 201))
    },
    idem_redis: async () => {
      app.use('/orders', idempotency({ idem: await leasedIdem(), scope: () => SCOPE }))
      app.post('/orders', async (c) => c.json(await insertOrder(pool, await c.req.text(), ref(c)), 201))
    },
    idem_redis_prescribed: async () => {
      app.use('/orders', idempotency({ idem: await leasedIdem(), scope: () => SCOPE }))
      app.post('/orders', async (c) => c.json(await upsertOrder(pool, c.get('idem').tx.derive('order'), await c.req.text(), ref(c)), 201))
    },
  }
  await routes[variant]()
  return listen(serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }))
}

/** idem's leased engine on Redis, with its defaults (the lease included). */
async function leasedIdem({ enableAutoPipelining = true } = {}) {
  const { Redis } = await import('ioredis')
  const { createLeasedIdem } = await import('../../dist/index.js')
  const { redisStore } = await import('../../dist/stores/redis/index.js')
  // As docs/leased.md recommends for a server: concurrent requests' commands written together.
  const client = new Redis(redisUrl, { enableAutoPipelining })
  closers.push(() => client.quit())
  return createLeasedIdem({ store: redisStore({ client, prefix }) })
}

async function listen(server) {
  server.keepAliveTimeout = 60_000
  await new Promise((resolve) => server.once('listening', resolve))
  closers.push(() => new Promise((resolve) => server.close(resolve)))
  return server.address().port
}

// ---- Start: listen, then tell the parent the port ----
const port = framework === 'hono' ? await serveHono() : await serveExpress()

process.on('message', (message) => {
  if (message === 'cpu') process.send({ cpu: process.cpuUsage() })
  else if (message === 'runs') process.send({ runs: Object.fromEntries(runs) })
})
process.on('disconnect', async () => {
  setTimeout(() => process.exit(0), 1_000).unref()
  await Promise.allSettled(closers.map((close) => close()))
  process.exit(0)
})
process.send({ port })
