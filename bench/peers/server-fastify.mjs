// bench:peers on Fastify 5 (the repository's own `fastify`): idem's variants through
// idem/fastify, and the peers that can run on it. express-idempotency cannot: it is
// Express middleware that learns the route's response by replacing Express's res.send,
// and a Fastify route answers through its reply, which never calls res.send.
import { handWritten, insertOrder, leasedIdem, nestjs, nodeIdempotency, pool, powertools, schema, SCOPE, upsertOrder } from './server-kit.mjs'

/** The Fastify app of PEERS_VARIANT, listening on a port of its own; resolves with its http.Server. */
export async function serve(variant) {
  const { default: Fastify } = await import('fastify')
  const app = Fastify({ keepAliveTimeout: 60_000 })
  app.get('/health', async (_req, reply) => reply.code(200).send())
  await routes[variant](app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app.server
}

const ref = (req) => req.headers['x-bench-ref']
/** Sends a glue's answer. */
const send = (reply, { status, headers, body }) => reply.code(status).headers(headers ?? {}).send(body)

async function idemRedis(app, work) {
  const { idempotency } = await import('../../dist/http/adapters/fastify/index.js')
  await app.register(idempotency({ idem: await leasedIdem(), scope: () => SCOPE }))
  app.post('/orders', async (req, reply) => reply.code(201).send(await work(req)))
}

const routes = {
  unprotected: async (app) => app.post('/orders', async (req, reply) => reply.code(201).send(await insertOrder(pool, req.body, ref(req)))),

  hand_written: async (app) => {
    const answer = handWritten()
    app.post('/orders', async (req, reply) => {
      const { status, body } = await answer({ key: req.headers['idempotency-key'], method: req.method, path: req.url, text: JSON.stringify(req.body), body: req.body, ref: ref(req) })
      return reply.code(status).type('application/json').send(body)
    })
  },

  idem_pg: async (app) => {
    const { idempotency } = await import('../../dist/http/adapters/fastify/index.js')
    const { postgresStore } = await import('../../dist/stores/postgres/index.js')
    await app.register(idempotency({ store: postgresStore({ pool, schema }), scope: () => SCOPE }))
    app.post('/orders', async (req, reply) => reply.code(201).send(await insertOrder(req.idem.tx, req.body, ref(req))))
  },

  idem_redis: (app) => idemRedis(app, (req) => insertOrder(pool, req.body, ref(req))),
  idem_redis_prescribed: (app) => idemRedis(app, (req) => upsertOrder(pool, req.idem.tx.derive('order'), req.body, ref(req))),

  // The core glued as on Express: onRequest and onResponse around the route.
  node_idempotency: async (app) => {
    const answer = await nodeIdempotency()
    app.post('/orders', async (req, reply) => send(reply, await answer({ headers: req.headers, body: req.body, path: req.url, method: req.method, ref: ref(req) })))
  },

  // The interceptor given Fastify's request and reply, as Nest's Fastify platform gives
  // them (it sets a replay's status with reply.code and its headers with reply.header).
  nestjs: async (app) => {
    const intercept = await nestjs()
    app.post('/orders', async (req, reply) => {
      reply.code(201)
      const { status, body } = await intercept(req, reply, () => insertOrder(pool, req.body, ref(req)))
      if (status !== undefined) reply.code(status)
      return reply.send(body)
    })
  },

  powertools: async (app) => {
    const answer = await powertools()
    app.post('/orders', async (req, reply) => send(reply, await answer({ key: req.headers['idempotency-key'], body: req.body, ref: ref(req) })))
  },
}
