// bench:redis: what leased mode on Redis costs a route whose effect lives outside any
// database: a POST /orders that charges a fake payment provider over loopback HTTP. A
// Hono app on @hono/node-server (in a child process) is driven by autocannon over
// loopback, as in bench:http, in four variants:
//   unprotected      the route alone
//   two_round_trips  the route between two plain Redis commands (a read before, a write
//                    after), without idem: the floor for any claim-then-complete design
//   scripts_by_hand  the route between idem's own claim and completion (protocol v3:
//                    SET NX PX GET, then the compare-and-set script, or SET IFEQ where
//                    the server has it), sent by hand through ioredis: the protocol's
//                    floor (a lease, a claimId, the body's SHA-256 as the fingerprint),
//                    with no engine and no middleware
//   fresh            the route behind the Idempotency-Key middleware (idem/hono) on the
//                    leased engine with the Redis store, a new key per request
//   replay           retries of keys the fresh requests stored (the route does not run)
// Two providers: one that answers at once (the headline: the worst case, where the
// machine's CPU, not waiting, bounds throughput) and one that takes PROVIDER_MS (20 ms by
// default; real payment APIs take 100 ms or more), where the round trips to Redis are
// what a request waits for in addition. The providers run in a worker thread of the child.
// Last, with no HTTP at all: the CPU per fresh key of the engine, the store and the
// scripts by hand, by process (the bench's share is the client's), against a plain HGET
// and SET.
// Build first (`npm run build`): this runs over dist/.
import { Redis } from 'ioredis'
import { createHash, randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { keyedVariants, measureVariants, serveParent, startServer } from './autocannon.mjs'
import { cpuLedger, dropRedisKeys, interleaved, ratio } from './support.mjs'

const REDIS_URL = process.env.IDEM_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2.5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const PROVIDER_MS = Number(process.env.PROVIDER_MS ?? 20)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16)
const BODY = '{"amount":1000}'

const loopback = (url) => /^redis:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/\d*)?$/.test(url)
if (!loopback(REDIS_URL)) throw new Error(`bench:redis runs against a loopback Redis only, got ${REDIS_URL}`)

if (process.argv[2] === '--serve') await serve()
else await drive()

/** The child: the providers, and one Hono app with every variant under /<provider>/. */
async function serve() {
  const [{ Hono }, { serve: serveHono }, http, { Worker }] = await Promise.all([
    import('hono'),
    import('@hono/node-server'),
    import('node:http'),
    import('node:worker_threads'),
  ])
  const { createLeasedIdem } = await import('../dist/index.js')
  const { redisStore } = await import('../dist/stores/redis/index.js')
  const { idempotency } = await import('../dist/http/adapters/hono/index.js')
  const { SCRIPTS } = await import('../dist/stores/redis/scripts.js')

  const providers = await startProviders(Worker)
  // node:http with keep-alive: on this machine undici's fetch managed a tenth of its
  // throughput over loopback, which would have made every variant wait on the client.
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS })
  const post = (url, body) =>
    new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk) => (text += chunk))
        res.on('end', () => resolve(JSON.parse(text)))
      })
      req.on('error', reject)
      req.end(body)
    })

  const client = new Redis(REDIS_URL)
  const prefix = process.env.BENCH_PREFIX
  const idem = createLeasedIdem({ store: redisStore({ client, prefix }) })
  defineByHand(client, SCRIPTS)
  let floorKeys = 0

  const app = new Hono()
  for (const [name, providerUrl] of Object.entries(providers)) {
    /** The route's work: read the order, charge the provider. */
    const charge = async (c) => {
      const order = await c.req.json()
      const { id } = await post(providerUrl, JSON.stringify({ amount: order.amount }))
      return { chargeId: id, amount: order.amount }
    }
    const route = async (c) => c.json(await charge(c), 201)
    app.post(`/${name}/plain`, route)
    app.post(`/${name}/floor`, async (c) => {
      const key = `${prefix}floor:${floorKeys++}`
      await client.hget(key, 'state')
      const answer = await charge(c)
      await client.set(key, JSON.stringify(answer), 'PX', 60_000)
      return c.json(answer, 201)
    })
    app.post(`/${name}/scripts`, async (c) => {
      const text = await c.req.text()
      const fingerprint = createHash('sha256').update(text).digest('hex')
      const keys = byHandKeys(prefix, 'bench', c.req.header('idempotency-key'))
      const held = await claimByHand(client, keys, fingerprint)
      if (held === undefined) return c.json({ state: 'found' }, 409)
      const order = JSON.parse(text)
      const { id } = await post(providerUrl, JSON.stringify({ amount: order.amount }))
      const body = JSON.stringify({ chargeId: id, amount: order.amount })
      await completeByHand(client, keys, held, fingerprint, JSON.stringify({ status: 201, body }))
      return c.body(body, 201, { 'content-type': 'application/json' })
    })
    app.use(`/${name}/idem`, idempotency({ idem, scope: () => 'bench' }))
    app.post(`/${name}/idem`, route)
  }
  const server = serveHono({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 })
  await new Promise((resolve) => server.once('listening', resolve))
  serveParent({ app: server.address().port })
}

/** The parent: starts the child, runs autocannon against each variant, prints ratios. */
async function drive() {
  if (!existsSync(new URL('../dist/http/adapters/hono/index.js', import.meta.url))) {
    console.error('bench:redis runs over dist/: run `npm run build` first')
    process.exit(1)
  }
  const prefix = `idem-bench:${process.pid}:`
  const server = await startServer(fileURLToPath(import.meta.url), { BENCH_PREFIX: prefix })
  const url = `http://127.0.0.1:${server.ports.app}`
  const rates = {}
  try {
    console.log(
      `bench:redis: Hono on @hono/node-server; route = one loopback HTTP call to a fake provider; ` +
        `${CONNECTIONS} connections, ${ROUNDS} × ${SECONDS} s per variant`,
    )
    const headers = { 'content-type': 'application/json' }
    for (const provider of ['instant', 'slow']) {
      const keyed = keyedVariants(`/${provider}/idem`, headers, CONNECTIONS)
      const byHand = keyedVariants(`/${provider}/scripts`, headers, CONNECTIONS)
      rates[provider] = await measureVariants({
        label: provider === 'slow' ? `${PROVIDER_MS}ms` : provider,
        url,
        variants: {
          unprotected: { path: `/${provider}/plain`, headers },
          two_round_trips: { path: `/${provider}/floor`, headers },
          scripts_by_hand: byHand.fresh,
          fresh: keyed.fresh,
          replay: keyed.replay,
        },
        body: BODY,
        rounds: ROUNDS,
        seconds: SECONDS,
        connections: CONNECTIONS,
        serverCpu: server.serverCpu,
        serverPid: server.pid,
      })
    }
  } finally {
    await server.stop()
  }
  try {
    await scriptCost(prefix)
  } finally {
    await dropKeys(prefix)
  }
  const { instant, slow } = rates
  // Information: the two round trips carry no lease, token or steps.
  ratio('redis.fresh_vs_two_round_trips', instant.fresh / instant.two_round_trips)
  // The ceiling of fresh_vs_unprotected for any claim-then-complete design: the two
  // round trips alone, with no idem logic.
  ratio('redis.two_round_trips_vs_unprotected', instant.two_round_trips / instant.unprotected)
  ratio(`redis.provider_${PROVIDER_MS}ms.fresh_vs_unprotected`, slow.fresh / slow.unprotected)
  ratio(`redis.provider_${PROVIDER_MS}ms.replay_vs_unprotected`, slow.replay / slow.unprotected)
  // The measures last.
  ratio('redis.fresh_vs_unprotected', instant.fresh / instant.unprotected)
  ratio('redis.replay_vs_unprotected', instant.replay / instant.unprotected)
  // What idem adds to its own protocol: the engine and the middleware over the scripts by hand.
  ratio('redis.fresh_vs_scripts_by_hand', instant.fresh / instant.scripts_by_hand)
}

/** idem's compare-and-set script (protocol v3's completion on a server without SET IFEQ), as a command of its own on `client`. */
function defineByHand(client, scripts) {
  client.defineCommand('idemByHandSwap', { lua: scripts.idemSwapV3, numberOfKeys: 1 })
}

/** Protocol v3's claim by hand: the 3h value it wrote, or undefined when the key held one already. */
async function claimByHand(client, keys, fingerprint) {
  const held = `3h ${randomUUID()} ${fingerprint}`
  return (await client.set(keys.claim, held, 'NX', 'PX', 5_000, 'GET')) === null ? held : undefined
}

/** Protocol v3's completion by hand, of a claim without steps. */
async function completeByHand(client, keys, held, fingerprint, outcome) {
  await client.idemByHandSwap(keys.claim, held, `3c ${fingerprint.length} ${fingerprint}${outcome}`, 86_400_000)
}

/** The keys the store would use (see src/stores/redis/keys.ts), for keys that need no encoding. */
function byHandKeys(prefix, scope, key) {
  const tag = `${prefix}{${scope}:${key}}`
  return { claim: `${tag}:claim`, steps: `${tag}:steps` }
}

/** The fake payment providers, in a worker thread so they do not share the app's event loop. */
async function startProviders(Worker) {
  const worker = new Worker(
    `
    const http = require('node:http')
    const { parentPort, workerData } = require('node:worker_threads')
    let charges = 0
    const serve = (delayMs) => new Promise((resolve) => {
      const server = http.createServer((req, res) => {
        req.resume()
        req.on('end', () => {
          const answer = () => {
            res.writeHead(200, { 'content-type': 'application/json' })
            res.end(JSON.stringify({ id: 'ch_' + ++charges }))
          }
          if (delayMs > 0) setTimeout(answer, delayMs)
          else answer()
        })
      })
      server.keepAliveTimeout = 60000
      server.listen(0, '127.0.0.1', () => resolve(server.address().port))
    })
    Promise.all([serve(0), serve(workerData.delayMs)]).then((ports) => parentPort.postMessage(ports))
    `,
    { eval: true, workerData: { delayMs: PROVIDER_MS } },
  )
  const [instantPort, slowPort] = await new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  worker.unref()
  return { instant: `http://127.0.0.1:${instantPort}/charges`, slow: `http://127.0.0.1:${slowPort}/charges` }
}

/**
 * What a fresh key costs the machine, by process, 16 at a time and no HTTP: the engine
 * (`idem.run`, the fingerprint given), the store's claim and complete, the same scripts
 * by hand, and a plain HGET and SET. The bench's share is the client's CPU; Redis's
 * share is what the scripts' checks cost it by themselves, apart from the load of a
 * server.
 */
async function scriptCost(prefix) {
  const { createLeasedIdem } = await import('../dist/index.js')
  const { redisStore } = await import('../dist/stores/redis/index.js')
  const { SCRIPTS } = await import('../dist/stores/redis/scripts.js')
  const client = new Redis(REDIS_URL)
  const store = redisStore({ client, prefix })
  const idem = createLeasedIdem({ store })
  defineByHand(client, SCRIPTS)
  const answer = { chargeId: 'ch_1', amount: 1000 }
  const outcome = JSON.stringify({ status: 201, body: JSON.stringify(answer) })
  const fingerprint = 'f'.repeat(64)
  let keys = 0
  const variants = {
    engine: async () => {
      await idem.run({ scope: 'bench', key: `engine-${++keys}`, fingerprint }, async () => answer)
    },
    store: async () => {
      const key = `store-${++keys}`
      const claim = await store.claim('bench', key, fingerprint, 5_000, 86_400_000)
      await claim.lease.complete(outcome, 86_400_000)
    },
    scripts_by_hand: async () => {
      const byHand = byHandKeys(prefix, 'bench', `hand-${++keys}`)
      await completeByHand(client, byHand, await claimByHand(client, byHand, fingerprint), fingerprint, outcome)
    },
    hget_set: async () => {
      const key = `${prefix}plain:${++keys}`
      await client.hget(key, 'state')
      await client.set(key, outcome, 'PX', 86_400_000)
    },
  }
  const run = async (fresh, count) => {
    let left = count
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (left-- > 0) await fresh()
      }),
    )
    return { value: count, operations: count }
  }
  try {
    for (const fresh of Object.values(variants)) await run(fresh, 2_000)
    const machine = cpuLedger({ [process.pid]: 'bench' })
    await interleaved(variants, 5, (fresh, name) => machine.record(name, () => run(fresh, 10_000)))
    console.log("what a fresh key costs without HTTP (16 at a time; the bench's share is the client's, Redis's the scripts'):")
    machine.print('fresh key')
  } finally {
    client.disconnect()
  }
}

async function dropKeys(prefix) {
  const client = new Redis(REDIS_URL)
  await dropRedisKeys(client, prefix)
  client.disconnect()
}
