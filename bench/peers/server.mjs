// One bench:peers server: one framework (PEERS_FRAMEWORK: express4, express5, fastify,
// hono), one variant (PEERS_VARIANT) and, for idem's Redis variants, one Redis client
// (PEERS_CLIENT, a name in ../redis-clients.mjs), forked by peers.mjs, each in its own
// process. Every variant serves POST /orders, whose route does one INSERT on Postgres and
// answers 201 { id }; GET /health answers 200 (to open connections before a burst). The
// routes are in server-express.mjs, server-fastify.mjs and server-hono.mjs, what they
// share in server-kit.mjs. The peers come from this folder's node_modules; idem from the
// repository's dist/; pg, the Redis clients, fastify, hono and @hono/node-server from the
// repository's own node_modules.
//
// Over IPC it tells the parent its port and answers:
// 'cpu' (process.cpuUsage()), 'runs' (the scenarios' runs of the route per
// `x-bench-ref`), and with PEERS_PROFILE { profile: 'start' } and { profile: 'stop', file }
// (a V8 CPU profile of the span in between, written to `file`). With PEERS_CRASH_REF set
// the route SIGKILLs its own process right after the INSERT of the request carrying that ref.
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { closers, framework, runs, variant } from './server-kit.mjs'

const SERVERS = { express4: './server-express.mjs', express5: './server-express.mjs', fastify: './server-fastify.mjs', hono: './server-hono.mjs' }
// The profiler's sampling interval, in µs.
const PROFILE_INTERVAL_US = Number(process.env.PEERS_PROFILE_INTERVAL_US ?? 250)

const closeAll = () => Promise.allSettled(closers.map((close) => close()))

const { serve } = await import(SERVERS[framework])
const server = await serve(variant)
server.keepAliveTimeout = 60_000
if (!server.listening) await new Promise((resolve) => server.once('listening', resolve))
closers.push(() => new Promise((resolve) => server.close(resolve)))

let session
process.on('message', async (message) => {
  if (message === 'cpu') process.send({ cpu: process.cpuUsage() })
  else if (message === 'runs') process.send({ runs: Object.fromEntries(runs) })
  else if (message?.profile === 'start') {
    if (session === undefined) {
      session = new Session()
      session.connect()
      await session.post('Profiler.enable')
      await session.post('Profiler.setSamplingInterval', { interval: PROFILE_INTERVAL_US })
    }
    await session.post('Profiler.start')
    process.send({ profiling: true })
  } else if (message?.profile === 'stop') {
    const { profile } = await session.post('Profiler.stop')
    writeFileSync(message.file, JSON.stringify(profile))
    process.send({ profiled: message.file })
  }
})
process.on('disconnect', async () => {
  setTimeout(() => process.exit(0), 1_000).unref()
  await closeAll()
  process.exit(0)
})
process.send({ port: server.address().port })

