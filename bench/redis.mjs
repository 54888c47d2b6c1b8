// bench:redis: what leased mode on Redis costs a route whose effect lives outside any
// database: a POST /orders that charges a fake payment provider over loopback HTTP.
// Four variants, 16 concurrent callers, interleaved over BENCH_ROUNDS of BENCH_SECONDS:
//   unprotected  the route alone
//   two_round_trips  the route between two plain Redis commands (a read before, a write
//                after), without idem: the floor for any claim-then-complete design
//   fresh        the same route behind the Idempotency-Key middleware (idem/fetch) on the
//                leased engine with the Redis store, a new key per request
//   replay       the middleware answering keys stored beforehand (the route does not run)
// Two providers: one that answers at once (the headline: the worst case, where the
// machine's CPU, not waiting, bounds throughput) and one that takes PROVIDER_MS (20 ms by
// default; real payment APIs take 100 ms or more), where the round trips to Redis are
// what a request waits for in addition.
// Requests are Web-standard Request objects handed to the Fetch-standard handler in
// process (as Hono's app.request does), so the numbers are the middleware's and the
// store's, not an HTTP server's. Without the middleware the same work goes through the
// engine directly, and the bench says so. Providers run in a worker thread.
import { Redis } from 'ioredis'
import { randomUUID } from 'node:crypto'
import http from 'node:http'
import { Worker } from 'node:worker_threads'
import { createLeasedIdem } from '../dist/index.js'
import { redisStore } from '../dist/stores/redis/index.js'
import { interleaved, ratio, throughput } from './support.mjs'

const REDIS_URL = process.env.IDEM_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const SECONDS = Math.min(Number(process.env.BENCH_SECONDS ?? 3), 5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const PROVIDER_MS = Number(process.env.PROVIDER_MS ?? 20)
const CONCURRENCY = 16
const STORED = 1_000

const loopback = (url) => /^redis:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/\d*)?$/.test(url)
if (!loopback(REDIS_URL)) throw new Error(`bench:redis runs against a loopback Redis only, got ${REDIS_URL}`)

const providers = await startProviders()
const client = new Redis(REDIS_URL)
const prefix = `idem-bench:${process.pid}:`
const idem = createLeasedIdem({ store: redisStore({ client, prefix }) })
const run = randomUUID().slice(0, 8)

// node:http with keep-alive: on this machine undici's fetch managed a tenth of its
// throughput over loopback, which would have made every variant wait on the client.
const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })

/** The route: read the order, charge the provider, answer 201 with the charge. */
async function route(request, providerUrl) {
  const order = await request.json()
  const charge = await post(providerUrl, JSON.stringify({ amount: order.amount }))
  return Response.json({ chargeId: charge.id, amount: order.amount }, { status: 201 })
}

const order = (key) =>
  new Request('http://bench.local/orders', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: '{"amount":1000}',
  })

let through = 'the HTTP middleware (idem/fetch)'
let protect
try {
  const { idempotency } = await import('../dist/http/fetch/index.js')
  // The leased engine has the engine's run(options, fn) shape, so the middleware takes it as `idem`.
  const middleware = idempotency({ idem, scope: () => 'bench' })
  protect = (request, providerUrl) => middleware(request, (req) => route(req, providerUrl))
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error
  through = 'the leased engine directly (the HTTP middleware is not built)'
  protect = async (request, providerUrl) => {
    const key = request.headers.get('idempotency-key')
    const { value, replayed } = await idem.run({ scope: 'bench', key, input: { amount: 1000 } }, async () => {
      const response = await route(request, providerUrl)
      return { status: response.status, body: await response.text() }
    })
    return new Response(value.body, { status: value.status, headers: replayed ? { 'idempotent-replayed': 'true' } : {} })
  }
}

async function call(request, providerUrl, expectReplay) {
  const response = await protect(request, providerUrl)
  await response.arrayBuffer()
  const replayed = response.headers.get('idempotent-replayed') === 'true'
  if (response.status !== 201 || replayed !== expectReplay) {
    throw new Error(`unexpected answer: ${response.status}, replayed ${replayed} (expected ${expectReplay})`)
  }
}

/** Measures the three variants against one provider; returns req/s per variant. */
async function scenario(name, providerUrl) {
  const variants = {
    unprotected: async (i, round) => {
      const response = await route(order(`${run}-${name}-u-${round}-${i}`), providerUrl)
      await response.arrayBuffer()
    },
    // The floor of any design with a claim and a completion on Redis: the route between
    // two plain round trips (read the key's hash, then write it), no idem code at all.
    two_round_trips: async (i, round) => {
      const key = `${prefix}floor:${name}-${round}-${i}`
      await client.hget(key, 'state')
      const response = await route(order(key), providerUrl)
      await client.set(key, await response.text(), 'PX', 60_000)
    },
    fresh: (i, round) => call(order(`${run}-${name}-f-${round}-${i}`), providerUrl, false),
    replay: (i) => call(order(`${run}-${name}-stored-${i % STORED}`), providerUrl, true),
  }
  for (let i = 0; i < STORED; i++) await call(order(`${run}-${name}-stored-${i}`), providerUrl, false)
  let round = 0
  const rps = await interleaved(variants, ROUNDS, (variant) => {
    const r = round++
    return throughput((i) => variant(i, r), { concurrency: CONCURRENCY, ms: SECONDS * 1000 })
  })
  console.log(`  provider ${name}:`)
  for (const [variant, value] of Object.entries(rps)) console.log(`    ${variant.padEnd(16)} ${value.toFixed(0).padStart(7)} req/s`)
  return rps
}

console.log(
  `bench:redis — through ${through}; route = one loopback HTTP call to a fake provider; ` +
    `${CONCURRENCY} concurrent callers, ${ROUNDS} interleaved rounds of ${SECONDS}s`,
)
const instant = await scenario('instant', providers.instant)
const slow = await scenario(`${PROVIDER_MS}ms`, providers.slow)

await dropKeys()
client.disconnect()
agent.destroy()
await providers.stop()

ratio('redis.fresh_vs_unprotected', instant.fresh / instant.unprotected)
ratio('redis.fresh_vs_two_round_trips', instant.fresh / instant.two_round_trips)
ratio('redis.replay_vs_unprotected', instant.replay / instant.unprotected)
ratio(`redis.provider_${PROVIDER_MS}ms.fresh_vs_unprotected`, slow.fresh / slow.unprotected)
ratio(`redis.provider_${PROVIDER_MS}ms.replay_vs_unprotected`, slow.replay / slow.unprotected)

function post(url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => (text += chunk))
      res.on('end', () => resolve(JSON.parse(text)))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** The fake payment providers, in a worker thread so they do not share the bench's event loop. */
async function startProviders() {
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
  return {
    instant: `http://127.0.0.1:${instantPort}/charges`,
    slow: `http://127.0.0.1:${slowPort}/charges`,
    stop: () => worker.terminate(),
  }
}

async function dropKeys() {
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    if (keys.length > 0) await client.unlink(...keys)
    cursor = next
  } while (cursor !== '0')
}
