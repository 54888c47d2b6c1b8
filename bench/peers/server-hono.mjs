// bench:peers on Hono (the repository's own hono and @hono/node-server): idem's variants
// only; no peer is Hono middleware (docs/comparison.md says which were looked for).
import { handWritten, insertOrder, leasedIdem, pool, schema, SCOPE, upsertOrder } from './server-kit.mjs'

/** The Hono app of PEERS_VARIANT on @hono/node-server, listening on a port of its own; resolves with its http.Server. */
export async function serve(variant) {
  const [{ Hono }, { serve: listen }, { idempotency }] = await Promise.all([import('hono'), import('@hono/node-server'), import('../../dist/http/adapters/hono/index.js')])
  const app = new Hono()
  app.get('/health', (c) => c.body(null, 200))
  const ref = (c) => c.req.header('x-bench-ref')
  const idemRedis = async (work) => {
    app.use('/orders', idempotency({ idem: await leasedIdem(), scope: () => SCOPE }))
    app.post('/orders', async (c) => c.json(await work(c, await c.req.text()), 201))
  }
  const routes = {
    unprotected: () => app.post('/orders', async (c) => c.json(await insertOrder(pool, await c.req.text(), ref(c)), 201)),
    hand_written: () => {
      const answer = handWritten()
      app.post('/orders', async (c) => {
        const text = await c.req.text()
        const { status, body } = await answer({ key: c.req.header('idempotency-key'), method: 'POST', path: c.req.path, text, body: text, ref: ref(c) })
        return c.body(body, status, { 'content-type': 'application/json' })
      })
    },
    idem_pg: async () => {
      const { postgresStore } = await import('../../dist/stores/postgres/index.js')
      app.use('/orders', idempotency({ store: postgresStore({ pool, schema }), scope: () => SCOPE }))
      app.post('/orders', async (c) => c.json(await insertOrder(c.get('idem').tx, await c.req.text(), ref(c)), 201))
    },
    idem_redis: () => idemRedis((c, text) => insertOrder(pool, text, ref(c))),
    idem_redis_prescribed: () => idemRedis((c, text) => upsertOrder(pool, c.get('idem').tx.derive('order'), text, ref(c))),
  }
  await routes[variant]()
  return listen({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 })
}
