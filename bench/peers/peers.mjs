// bench:peers: idem against what users choose between, side by side in one run: the
// route unprotected, the same work with a hand-written key row, idem (Postgres,
// transactional; Redis, leased: the route as written and as the leased docs prescribe,
// on each Redis client) and the other idempotency libraries on Redis, on Express 4 and
// 5, Fastify 5 and Hono (variants.mjs says which runs where, and why).
// Every route does one INSERT on Postgres. Every server runs in a child process of its
// own (server.mjs); autocannon drives them from this process over loopback.
//
// Per variant: fresh requests (a new key each) and replays (retries of stored keys), as
// the median of interleaved rounds with min–max: req/s, p50/p99 and the server process's
// CPU per request, each against its own framework's unprotected route; then, once each,
// the correctness scenarios (scenarios.mjs: races, another body, a crash after the INSERT).
// Machine CPU and steal (from /proc/stat) are printed per round. Ends with RATIO lines
// (report.mjs), by throughput and by server CPU per request.
//
// Run it with `npm run bench:peers` at the repository's root: it builds dist/ and
// installs this folder's own dependencies (the peers) from its lockfile first.
// PEERS_QUICK=1 for a smoke run; see docs/benchmarks.md for every setting.
import autocannon from 'autocannon'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { Redis } from 'ioredis'
import pg from 'pg'
import { handWrittenTable } from '../hand-written.mjs'
import { REDIS_CLIENTS, repositoryVersion } from '../redis-clients.mjs'
import { cpuLedger, dropRedisKeys } from '../support.mjs'
import { printProfiles, printRatios, printTables } from './report.mjs'
import { crash, lastIds, otherBody, race, rowsSince } from './scenarios.mjs'
import { startServer } from './server-process.mjs'
import { BODY, CLIENTS, CONNECTIONS, CRASH_WAIT_S, FRAMEWORKS, HEADERS, PG_URL, POOL_SIZE, PREFIX, PROFILE, QUICK } from './settings.mjs'
import { RACE_COPIES, RACE_KEYS, REDIS_URL, ROUNDS, SCHEMA, SECONDS, sleep, WARM_UP_SECONDS } from './settings.mjs'
import { NOTES, PEERS, serversToRun, VARIANTS } from './variants.mjs'

const loopback = (url) => /^[a-z]+:\/\/([^@/]*@)?(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/.*)?$/.test(url)
if (!loopback(PG_URL) || !loopback(REDIS_URL)) throw new Error('bench:peers runs against a loopback Postgres and Redis only')
const here = (path) => new URL(path, import.meta.url)

async function main() {
  if (!existsSync(here('../../dist/http/adapters/express/index.js'))) fail('bench:peers runs over dist/: run `npm run build` first (npm run bench:peers does)')
  if (!existsSync(here('node_modules/express-idempotency'))) fail('bench:peers needs its own packages: npm ci --prefix bench/peers (npm run bench:peers does)')
  printSetup()
  if (PROFILE !== undefined) mkdirSync(PROFILE, { recursive: true })

  const admin = new pg.Pool({ connectionString: PG_URL, max: 2, connectionTimeoutMillis: 10_000 })
  admin.on('error', (error) => console.error(`idle Postgres connection failed: ${error.message}`))
  const redis = new Redis(REDIS_URL)
  const servers = []
  let cleaned = false
  const cleanUp = async () => {
    if (cleaned) return
    cleaned = true
    await Promise.allSettled(servers.map((server) => server.process?.stop()))
    await admin.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`).catch((error) => console.error(`could not drop ${SCHEMA}: ${error.message}`))
    await admin.end()
    await dropRedisKeys(redis, PREFIX).catch((error) => console.error(`could not delete the Redis keys ${PREFIX}*: ${error.message}`))
    redis.disconnect()
  }
  process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)))
  try {
    await admin.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE; CREATE SCHEMA "${SCHEMA}"`)
    const { postgresStore } = await import('../../dist/stores/postgres/index.js')
    await postgresStore({ pool: admin, schema: SCHEMA }).migrate()
    await admin.query(handWrittenTable(SCHEMA))
    await admin.query(`CREATE TABLE "${SCHEMA}".orders (id bigserial PRIMARY KEY, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
    await admin.query(
      `CREATE TABLE "${SCHEMA}".orders_keyed (id bigserial PRIMARY KEY, effect_key text NOT NULL UNIQUE, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    )

    for (const server of serversToRun()) servers.push(Object.assign(server, { process: await startServer(server) }))

    await throughput(servers, admin)
    if (PROFILE !== undefined) return printProfiles(servers)
    console.log(`\nscenarios (${RACE_KEYS} keys × ${RACE_COPIES} simultaneous requests, another body, a crash after the INSERT with retries for up to ${CRASH_WAIT_S} s)…`)
    for (const server of servers) {
      server.race = await race(server, admin)
      server.otherBody = await otherBody(server, admin)
    }
    // The crashes wait out leases: a framework's at once, each on its own server and key.
    for (const framework of FRAMEWORKS) {
      const crashing = servers.filter((server) => server.framework === framework)
      await Promise.all(crashing.map(async (server) => (server.crash = await crash(server, admin, startServer))))
    }

    printTables(servers)
    printRatios(servers)
  } finally {
    await cleanUp()
  }
}

function fail(message) {
  console.error(message)
  process.exit(1)
}

function printSetup() {
  const version = (name) => {
    try {
      const manifest = JSON.parse(readFileSync(here(`node_modules/${name}/package.json`), 'utf8'))
      return { version: manifest.version, engines: manifest.engines?.node }
    } catch {
      return undefined
    }
  }
  console.log(
    `bench:peers: Node ${process.version}; ${CONNECTIONS} connections; ${ROUNDS} interleaved round(s) × ${SECONDS} s per variant and mode; ` +
      `pool of ${POOL_SIZE} per server; one INSERT per request${QUICK ? '; QUICK (a smoke run: the figures mean nothing)' : ''}`,
  )
  console.log(
    `frameworks: ${FRAMEWORKS.join(', ')}; express ${version('express4')?.version} and ${version('express5')?.version} (this folder), ` +
      `fastify ${repositoryVersion('fastify')}, hono ${repositoryVersion('hono')} (the repository's)`,
  )
  const clients = CLIENTS.map((name) => `${name} = ${REDIS_CLIENTS[name].label}, ${REDIS_CLIENTS[name].package} ${repositoryVersion(REDIS_CLIENTS[name].package)}`)
  console.log(`idem's Redis clients (the repository's): ${clients.join('; ')}`)
  const missing = []
  for (const [name, ...with_] of PEERS) {
    const found = version(name)
    if (found === undefined) {
      missing.push(name)
      continue
    }
    const parts = with_.map((dep) => `${dep} ${version(dep)?.version ?? '?'}`)
    console.log(`peer: ${name} ${found.version} (engines: ${found.engines ?? 'none declared'}; with ${parts.join(', ')})`)
  }
  // Installed with npm ci --engine-strict: a peer that declared another Node would not have installed.
  if (missing.length > 0) fail(`peers missing from bench/peers/node_modules: ${missing.join(', ')} (run npm ci --prefix bench/peers)`)
  console.log('left out: none; every peer installs on this Node (npm ci --engine-strict)')
  for (const note of NOTES) console.log(`note: ${note}`)
}

// ---- load ----

const keyOf = (server, n) => `${PREFIX}k.${server.slug}.${n}`
/** The n-th (cyclically) of the keys the server's fresh runs stored. */
function storedKey(server, n) {
  const total = server.stored.reduce((sum, [from, to]) => sum + to - from, 0)
  // None stored yet (a warm-up too short for this machine): any key sent so far; the
  // replay rows column then shows the ones that ran.
  if (total === 0) return n % Math.max(1, server.issued)
  let left = n % total
  for (const [from, to] of server.stored) {
    if (left < to - from) return from + left
    left -= to - from
  }
  throw new Error('unreachable')
}

/**
 * One autocannon run of `mode` on a server: `fresh` sends a new key with every request
 * (the unprotected route gets one too, unread, so that autocannon rebuilds every
 * request alike); `replay` retries keys its fresh runs stored (all but the last few
 * of each run, whose request may have been dropped in flight).
 */
async function run(server, mode, seconds) {
  const key = mode === 'fresh' ? () => keyOf(server, server.issued++) : () => keyOf(server, storedKey(server, server.replayed++))
  const setupRequest = (request) => {
    request.headers = { ...HEADERS, 'idempotency-key': key() }
    return request
  }
  const from = server.issued
  const result = await autocannon({
    url: `http://127.0.0.1:${server.process.port}`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [{ method: 'POST', path: '/orders', body: BODY, headers: HEADERS, setupRequest }],
  })
  // The keys this run stored: all but the last few issued, whose requests autocannon may
  // have dropped in flight when it stopped (a request whose client left may be rolled back).
  if (mode === 'fresh' && server.issued - 2 * CONNECTIONS > from) server.stored.push([from, server.issued - 2 * CONNECTIONS])
  return {
    rate: result['2xx'] / result.duration,
    operations: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    bad: result.non2xx + result.errors + result.timeouts,
    statuses: result.statusCodeStats,
  }
}

// ---- throughput ----

/** /proc/stat's first line: jiffies by kind, summed over the cores. */
function procStat() {
  try {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/)
    const [user, nice, system, idle, iowait, irq, softirq, steal] = fields.map(Number)
    return { user: user + nice, system: system + irq + softirq, idle, iowait, steal }
  } catch {
    return undefined
  }
}
function describeCpu(before, after) {
  if (before === undefined || after === undefined) return 'machine CPU: unknown (no /proc/stat)'
  const d = Object.fromEntries(Object.keys(before).map((kind) => [kind, after[kind] - before[kind]]))
  const total = Object.values(d).reduce((a, b) => a + b, 0) || 1
  const pc = (value) => `${((100 * value) / total).toFixed(0)}%`
  return `machine CPU busy ${pc(d.user + d.system + d.steal)} (user ${pc(d.user)}, system ${pc(d.system)}, steal ${pc(d.steal)}), iowait ${pc(d.iowait)}`
}

async function throughput(servers, db) {
  const runs = servers.flatMap((server) => (VARIANTS[server.variant].keyed && PROFILE === undefined ? ['fresh', 'replay'] : ['fresh']).map((mode) => ({ server, mode })))
  console.log(`warm-up: ${WARM_UP_SECONDS} s per variant and mode…`)
  for (const { server, mode } of runs) await run(server, mode, WARM_UP_SECONDS)
  for (const server of servers) {
    const stored = server.stored.reduce((sum, [from, to]) => sum + to - from, 0)
    if (VARIANTS[server.variant].keyed && stored === 0) console.log(`warning: ${server.slug} stored no key in the warm-up (${server.issued} sent); its first replays may run the route`)
  }
  const named = { [process.pid]: 'autocannon' }
  for (const server of servers) named[server.process.pid] = 'server'
  const machine = cpuLedger(named)
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now()
    const before = procStat()
    // Every other round in reverse order, as `interleaved` (../support.mjs) does.
    for (const { server, mode } of round % 2 === 0 ? runs : [...runs].reverse()) await measure(server, mode, round, machine, db)
    console.log(`round ${round + 1}/${ROUNDS}: ${((performance.now() - started) / 1000).toFixed(0)} s, ${describeCpu(before, procStat())}`)
  }
  console.log('machine CPU per request, by process (all servers count as "server"):')
  machine.print('request')
}

/** One measured run: its req/s, latency and the server process's CPU per request (and, with PEERS_PROFILE, its CPU profile). */
async function measure(server, mode, round, machine, db) {
  // Requests autocannon left in flight when the previous run stopped finish first.
  await sleep(250)
  const since = mode === 'replay' ? await lastIds(db) : undefined
  if (PROFILE !== undefined) await server.process.profile('start')
  const cpuBefore = await server.process.cpu()
  const sample = await machine.record(`${server.slug} ${mode}`, async () => {
    const result = await run(server, mode, SECONDS)
    return { value: result, operations: result.operations }
  })
  const cpu = (await server.process.cpu()) - cpuBefore
  sample.cpu = sample.operations > 0 ? cpu / sample.operations : undefined
  if (PROFILE !== undefined) server.profiles.push(await server.process.profile('stop', `${PROFILE}/${server.slug}.${round + 1}.cpuprofile`))
  server.samples[mode].push(sample)
  if (since !== undefined) {
    await sleep(100)
    server.replayRows += await rowsSince(db, since)
  }
}

await main()
