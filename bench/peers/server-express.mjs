// bench:peers on Express 4 and 5 (this folder's express4 and express5): every variant.
import { closers, framework, handWritten, insertOrder, leasedIdem, nestjs, nodeIdempotency, pool, powertools, redisUrl, schema, SCOPE, upsertOrder } from './server-kit.mjs'

/** The Express app of PEERS_VARIANT, listening on a port of its own; resolves with its http.Server. */
export async function serve(variant) {
  const { default: express } = await import(framework === 'express4' ? 'express4' : 'express5')
  const app = express()
  app.set('etag', false)
  app.set('x-powered-by', false)
  const json = express.json()
  app.get('/health', (_req, res) => res.status(200).end())
  await routes[variant](app, json)
  // Errors the variants pass on (express-idempotency answers 409 and 417 this way); and
  // the requests autocannon drops mid-flight when it stops.
  app.use((error, _req, res, _next) => {
    if (res.headersSent) return void res.end()
    res.status(res.statusCode >= 400 ? res.statusCode : 500).json({ error: String(error?.message ?? error) })
  })
  return app.listen(0, '127.0.0.1')
}

const ref = (req) => req.headers['x-bench-ref']
/** Express 4 does not catch a rejected async handler: every route goes through this. */
const handler = (fn) => (req, res, next) => fn(req, res, next).catch(next)
/** Sends a glue's answer. */
const send = (res, { status, headers, body }) => void res.status(status).set(headers ?? {}).json(body)
const inserting = (json) => [json, handler(async (req, res) => res.status(201).json(await insertOrder(pool, req.body, ref(req))))]

async function idemRedis(app, json) {
  const { idempotency } = await import('../../dist/http/adapters/express/index.js')
  app.post('/orders', idempotency({ idem: await leasedIdem(), scope: () => SCOPE }), ...inserting(json))
}

const routes = {
  unprotected: async (app, json) => app.post('/orders', ...inserting(json)),

  hand_written: async (app, json) => {
    const answer = handWritten()
    app.post(
      '/orders',
      json,
      handler(async (req, res) => {
        const { status, body } = await answer({ key: req.get('idempotency-key'), method: req.method, path: req.path, text: JSON.stringify(req.body), body: req.body, ref: ref(req) })
        res.status(status).type('application/json').send(body)
      }),
    )
  },

  idem_pg: async (app, json) => {
    const { idempotency } = await import('../../dist/http/adapters/express/index.js')
    const { postgresStore } = await import('../../dist/stores/postgres/index.js')
    const store = postgresStore({ pool, schema })
    app.post(
      '/orders',
      idempotency({ store, scope: () => SCOPE }),
      json,
      handler(async (req, res) => res.status(201).json(await insertOrder(req.idem.tx, req.body, ref(req)))),
    )
  },

  idem_redis: idemRedis,
  // The same on ioredis without enableAutoPipelining (its default; PEERS_CLIENT says which
  // client): what the recommendation in docs/leased.md is worth.
  idem_redis_plain_client: idemRedis,

  idem_redis_prescribed: async (app, json) => {
    const { idempotency } = await import('../../dist/http/adapters/express/index.js')
    app.post(
      '/orders',
      idempotency({ idem: await leasedIdem(), scope: () => SCOPE }),
      json,
      handler(async (req, res) => res.status(201).json(await upsertOrder(pool, req.idem.tx.derive('order'), req.body, ref(req)))),
    )
  },

  node_idempotency: async (app, json) => {
    const answer = await nodeIdempotency()
    const request = (req) => ({ headers: req.headers, body: req.body, path: req.originalUrl, method: req.method, ref: ref(req) })
    app.post('/orders', json, handler(async (req, res) => send(res, await answer(request(req)))))
  },

  nestjs: async (app, json) => {
    const intercept = await nestjs()
    app.post(
      '/orders',
      json,
      handler(async (req, res) => {
        res.status(201)
        const { status, body } = await intercept(req, res, () => insertOrder(pool, req.body, ref(req)))
        if (status !== undefined) res.status(status)
        res.json(body)
      }),
    )
  },

  // express-idempotency with its Redis adapter, as its README shows: the middleware after
  // the body parser (it compares bodies), the route checking isHit.
  express_idempotency: async (app, json) => {
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

  powertools: async (app, json) => {
    const answer = await powertools()
    app.post('/orders', json, handler(async (req, res) => send(res, await answer({ key: req.get('idempotency-key'), body: req.body, ref: ref(req) }))))
  },
}
