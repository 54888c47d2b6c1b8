// bench:peers: idem against what users choose between, side by side in one run: the
// route unprotected, the same work with a hand-written key row, idem (Postgres,
// transactional; Redis, leased: the route as written and as the leased docs prescribe)
// and the other idempotency libraries on Redis, on Express 4 and 5 (and idem on Hono).
// Every route does one INSERT on Postgres. Every server runs in a child process of its
// own (server.mjs); autocannon drives them from this process over loopback.
//
// Per variant: fresh requests (a new key each) and replays (retries of stored keys), as
// the median of interleaved rounds with min–max, p50/p99 and the server's CPU per
// request, each against its own framework's unprotected route; then, once each:
//   races       RACE_KEYS keys × RACE_COPIES simultaneous identical requests: how often
//               the route ran per key, the rows it left, the statuses answered
//   other body  a used key with another body: the status (and whether the route ran)
//   crash       the server SIGKILLed right after the route's INSERT, restarted, and the
//               request retried until it is answered with something other than 409/5xx:
//               the statuses, the time from the crash until the key was usable, the rows
// Machine CPU and steal (from /proc/stat) are printed per round. Ends with RATIO lines.
//
// Run it with `npm run bench:peers` at the repository's root: it builds dist/ and
// installs this folder's own dependencies (the peers) from its lockfile first.
// PEERS_QUICK=1 for a smoke run; see docs/benchmarks.md for every setting.
import autocannon from 'autocannon'
import { fork } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import http from 'node:http'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import pg from 'pg'
import { handWrittenTable } from '../hand-written.mjs'
import { cpuLedger, dropRedisKeys, median, ratio } from '../support.mjs'

const env = process.env
const QUICK = env.PEERS_QUICK === '1'
const ROUNDS = Number(env.PEERS_ROUNDS ?? (QUICK ? 1 : 5))
const SECONDS = Number(env.PEERS_SECONDS ?? (QUICK ? 1 : 5))
const WARM_UP_SECONDS = Number(env.PEERS_WARM_UP_SECONDS ?? 1)
const CONNECTIONS = Number(env.PEERS_CONNECTIONS ?? 16)
const RACE_KEYS = Number(env.PEERS_RACE_KEYS ?? (QUICK ? 5 : 20))
const RACE_COPIES = Number(env.PEERS_RACE_COPIES ?? (QUICK ? 20 : 50))
const CRASH_WAIT_S = Number(env.PEERS_CRASH_WAIT_S ?? (QUICK ? 10 : 40))
const FRAMEWORKS = (env.PEERS_FRAMEWORKS ?? 'express4,express5,hono').split(',')
const ONLY = env.PEERS_VARIANTS?.split(',')
// A directory: each server runs under --cpu-prof, only fresh requests are sent, the
// scenarios are skipped, and the split of each server's CPU by part is printed (profile-split.mjs).
const PROFILE = env.PEERS_PROFILE
const PG_URL = env.IDEM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = env.IDEM_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const POOL_SIZE = Number(env.PEERS_POOL_SIZE ?? 16)
const ORDER = { customer: 'c_42', amount: 1250, currency: 'EUR', items: [{ sku: 'A-1', qty: 2 }] }
const BODY = JSON.stringify(ORDER)

const loopback = (url) => /^[a-z]+:\/\/([^@/]*@)?(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/.*)?$/.test(url)
if (!loopback(PG_URL) || !loopback(REDIS_URL)) throw new Error('bench:peers runs against a loopback Postgres and Redis only')

/** Every variant; `peer` marks the other libraries (the best of them is the target). */
const VARIANTS = {
  unprotected: { label: 'unprotected (no key)' },
  hand_written: { label: 'hand-written key row (Postgres tx)', keyed: true },
  idem_pg: { label: 'idem, Postgres (transactional)', keyed: true },
  idem_redis: { label: 'idem, Redis (leased), as written', keyed: true },
  idem_redis_prescribed: { label: 'idem, Redis, derived key + upsert', keyed: true },
  idem_redis_plain_client: { label: 'idem, Redis, client without autopipelining', keyed: true },
  node_idempotency: { label: '@node-idempotency/core + Redis', keyed: true, peer: true },
  nestjs: { label: '@node-idempotency/nestjs + Redis', keyed: true, peer: true },
  express_idempotency: { label: 'express-idempotency + Redis', keyed: true, peer: true },
  powertools: { label: 'Powertools, Redis, 5 s lease', keyed: true, peer: true },
}
// The other libraries are Express middleware (or glue for Express): Hono runs idem's variants only.
const ON_HONO = ['unprotected', 'hand_written', 'idem_pg', 'idem_redis', 'idem_redis_prescribed']

/** The peers as installed here, with what they declare they run on. */
const PEERS = [
  ['@node-idempotency/core', '@node-idempotency/storage-adapter-redis', 'redis'],
  ['@node-idempotency/nestjs', '@nestjs/core', '@nestjs/common', 'rxjs'],
  ['express-idempotency', 'express-idempotency-redis-adapter'],
  ['@aws-lambda-powertools/idempotency', '@redis/client'],
]
const NOTES = [
  '@node-idempotency/express, which the core README names, is not on the npm registry: the core is glued to Express as that README describes (onRequest, the route, onResponse).',
  '@node-idempotency/nestjs needs Nest (@nestjs/common, @nestjs/core, rxjs) installed but not a Nest app: its interceptor is constructed and called with an ExecutionContext and CallHandler of two lines each (server.mjs); Nest\u2019s own router is not measured.',
  'Powertools runs outside Lambda with makeIdempotent and a fake context whose getRemainingTimeInMillis() gives the 5 s in-progress expiry; body validation is off (2.35.0\u2019s Redis layer answers every replay 422 with it: PEERS_POWERTOOLS_VALIDATE=1 shows it).',
]

const here = (path) => fileURLToPath(new URL(path, import.meta.url))
const RUN = `idem-bench-peers-${process.pid}`
const PREFIX = `${RUN}:`
const SCHEMA = `idem_bench_peers_${process.pid}`
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))


async function main() {
  if (!existsSync(here('../../dist/http/express.js'))) fail('bench:peers runs over dist/: run `npm run build` first (npm run bench:peers does)')
  if (!existsSync(here('node_modules/express-idempotency'))) fail('bench:peers needs its own packages: npm ci --prefix bench/peers (npm run bench:peers does)')
  printSetup()

  const admin = new pg.Pool({ connectionString: PG_URL, max: 2, connectionTimeoutMillis: 10_000 })
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

    for (const framework of FRAMEWORKS) {
      for (const variant of framework === 'hono' ? ON_HONO : Object.keys(VARIANTS)) {
        if (ONLY !== undefined && !ONLY.includes(variant) && variant !== 'unprotected') continue
        servers.push({ framework, variant, slug: `${framework}.${variant}`, issued: 0, stored: [], replayed: 0, samples: { fresh: [], replay: [] }, replayRows: 0 })
      }
    }
    for (const server of servers) server.process = await startServer(server)

    await throughput(servers, admin)
    if (PROFILE !== undefined) return await printProfiles(servers)
    console.log(`\nscenarios (${RACE_KEYS} keys × ${RACE_COPIES} simultaneous requests, another body, a crash after the INSERT with retries for up to ${CRASH_WAIT_S} s)…`)
    for (const server of servers) {
      server.race = await race(server, admin)
      server.otherBody = await otherBody(server, admin)
    }
    // The crashes wait out leases: all at once, each on its own server and key.
    await Promise.all(servers.map(async (server) => (server.crash = await crash(server, admin))))

    printTables(servers)
    printRatios(servers)
  } finally {
    await cleanUp()
  }
}

/** Stops the servers (each writes its profile as it exits) and prints each one's CPU by part, per fresh request. */
async function printProfiles(servers) {
  await Promise.all(servers.map((server) => server.process.stop()))
  const { splitProfile } = await import('./profile-split.mjs')
  console.log(`\nserver CPU per fresh request by part, from a CPU profile of each server (${PROFILE}; warm-up included):`)
  for (const server of servers) {
    const micros = splitProfile(`${PROFILE}/${server.slug}.cpuprofile`)
    const total = [...micros.values()].reduce((sum, value) => sum + value, 0)
    const parts = [...micros].sort((a, b) => b[1] - a[1]).map(([part, value]) => `${part} ${Math.round(value / server.issued)}`)
    console.log(`  ${server.slug}: ${Math.round(total / server.issued)} µs (${parts.join(', ')})`)
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
  console.log(`frameworks: express ${version('express4')?.version} and ${version('express5')?.version} (this folder), hono (the repository's)`)
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

// ---- servers ----

/** Forks server.mjs for one framework and variant; resolves once it listens. */
async function startServer(server, extra = {}) {
  const profiled = PROFILE === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`, `--cpu-prof-name=${server.slug}.cpuprofile`]
  const child = fork(here('server.mjs'), [], {
    execArgv: [...process.execArgv, ...profiled],
    env: {
      ...env,
      PEERS_FRAMEWORK: server.framework,
      PEERS_VARIANT: server.variant,
      PEERS_SCHEMA: SCHEMA,
      PEERS_PREFIX: PREFIX,
      PEERS_PG_URL: PG_URL,
      PEERS_REDIS_URL: REDIS_URL,
      PEERS_POOL_SIZE: String(POOL_SIZE),
      ...extra,
    },
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const { port } = await new Promise((resolve, reject) => {
    child.once('message', resolve)
    child.once('exit', (code, signal) => reject(new Error(`${server.slug}: server exited (${code ?? signal}) before listening`)))
  })
  const ask = (question, field) =>
    new Promise((resolve) => {
      const answer = (message) => {
        if (message?.[field] === undefined) return
        child.off('message', answer)
        resolve(message[field])
      }
      child.on('message', answer)
      child.send(question)
    })
  return {
    port,
    pid: child.pid,
    exited,
    cpu: async () => {
      const { user, system } = await ask('cpu', 'cpu')
      return user + system
    },
    runs: () => ask('runs', 'runs'),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.disconnect()
      await exited
    },
  }
}

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
const HEADERS = { 'content-type': 'application/json' }

/**
 * One autocannon run of `mode` on a server: `fresh` sends a new key with every request
 * (the unprotected route gets one too, unread, so that autocannon rebuilds every
 * request alike); `replay` retries keys its fresh runs stored (all but the last few
 * of each run, whose request may have been dropped in flight).
 */
async function run(server, mode, seconds) {
  const setupRequest =
    mode === 'fresh'
      ? (request) => {
          request.headers = { ...HEADERS, 'idempotency-key': keyOf(server, server.issued++) }
          return request
        }
      : (request) => {
          request.headers = { ...HEADERS, 'idempotency-key': keyOf(server, storedKey(server, server.replayed++)) }
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
  const good = result['2xx']
  return {
    rate: good / result.duration,
    operations: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    bad: result.non2xx + result.errors + result.timeouts,
    statuses: result.statusCodeStats,
  }
}

/** The highest row ids, to count what a run added. */
async function lastIds(db) {
  const { rows } = await db.query(`SELECT (SELECT coalesce(max(id), 0) FROM "${SCHEMA}".orders) AS orders, (SELECT coalesce(max(id), 0) FROM "${SCHEMA}".orders_keyed) AS keyed`)
  return rows[0]
}
async function rowsSince(db, since) {
  const { rows } = await db.query(
    `SELECT (SELECT count(*) FROM "${SCHEMA}".orders WHERE id > $1) + (SELECT count(*) FROM "${SCHEMA}".orders_keyed WHERE id > $2) AS added`,
    [since.orders, since.keyed],
  )
  return Number(rows[0].added)
}
/** Rows added since `since`, by the ref in their body. */
async function rowsByRef(db, since) {
  const { rows } = await db.query(
    `SELECT ref, sum(n)::int AS n FROM (` +
      `SELECT body->>'ref' AS ref, count(*) AS n FROM "${SCHEMA}".orders WHERE id > $1 GROUP BY 1 UNION ALL ` +
      `SELECT body->>'ref' AS ref, count(*) AS n FROM "${SCHEMA}".orders_keyed WHERE id > $2 GROUP BY 1) r GROUP BY ref`,
    [since.orders, since.keyed],
  )
  return Object.fromEntries(rows.map((row) => [row.ref, row.n]))
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
  const cpu = new Map(runs.map((entry) => [entry, { micros: 0, requests: 0 }]))
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now()
    const before = procStat()
    // Every other round in reverse order, as `interleaved` (../support.mjs) does.
    for (const entry of round % 2 === 0 ? runs : [...runs].reverse()) {
      const { server, mode } = entry
      // Requests autocannon left in flight when the previous run stopped finish first.
      await sleep(250)
      const since = mode === 'replay' ? await lastIds(db) : undefined
      const cpuBefore = await server.process.cpu()
      const sample = await machine.record(`${server.slug} ${mode}`, async () => {
        const result = await run(server, mode, SECONDS)
        return { value: result, operations: result.operations }
      })
      const used = cpu.get(entry)
      used.micros += (await server.process.cpu()) - cpuBefore
      used.requests += sample.operations
      server.samples[mode].push(sample)
      if (since !== undefined) {
        await sleep(100)
        server.replayRows += await rowsSince(db, since)
      }
    }
    console.log(`round ${round + 1}/${ROUNDS}: ${((performance.now() - started) / 1000).toFixed(0)} s, ${describeCpu(before, procStat())}`)
  }
  for (const [{ server, mode }, { micros, requests }] of cpu) server.samples[`${mode}CpuPerRequest`] = micros / requests
  console.log('machine CPU per request, by process (all servers count as "server"):')
  machine.print('request')
}

/** Median, min and max of a mode's rounds. */
function summary(samples) {
  if (samples.length === 0) return undefined
  const rates = samples.map((sample) => sample.rate)
  return {
    rate: median(rates),
    min: Math.min(...rates),
    max: Math.max(...rates),
    p50: median(samples.map((sample) => sample.p50)),
    p99: median(samples.map((sample) => sample.p99)),
    bad: samples.reduce((sum, sample) => sum + sample.bad, 0),
    statuses: samples.reduce((all, sample) => {
      for (const [status, { count }] of Object.entries(sample.statuses)) all[status] = (all[status] ?? 0) + count
      return all
    }, {}),
  }
}

// ---- scenarios ----

function post(port, { key, body, ref }, agent) {
  return new Promise((resolve, reject) => {
    const headers = { ...HEADERS, 'content-length': Buffer.byteLength(body), 'x-bench-ref': ref }
    if (key !== undefined) headers['idempotency-key'] = key
    const request = http.request({ host: '127.0.0.1', port, path: '/orders', method: 'POST', agent, headers, timeout: 30_000 }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode))
    })
    request.on('timeout', () => request.destroy(new Error('timed out')))
    request.on('error', reject)
    request.end(body)
  })
}
function get(port, path, agent) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent, timeout: 10_000 }, (response) => response.resume().on('end', resolve)).on('error', reject)
  })
}
const countStatuses = (statuses) =>
  Object.entries(statuses.reduce((all, status) => ({ ...all, [status]: (all[status] ?? 0) + 1 }), {}))
    .sort()
    .map(([status, n]) => `${status}×${n}`)
    .join(' ')
const span = (values) => (values.length === 0 ? '—' : Math.min(...values) === Math.max(...values) ? `${values[0]}` : `${Math.min(...values)}–${Math.max(...values)}`)

/** RACE_KEYS keys, each sent RACE_COPIES times at once over connections opened beforehand. */
async function race(server, db) {
  const { port } = server.process
  const agent = new http.Agent({ keepAlive: true, maxSockets: RACE_COPIES })
  const since = await lastIds(db)
  const statuses = []
  const refs = []
  try {
    for (let k = 0; k < RACE_KEYS; k++) {
      // Open (or reopen) every connection first, so that the copies leave together.
      await Promise.all(Array.from({ length: RACE_COPIES }, () => get(port, '/health', agent)))
      const ref = `${RUN}.race.${server.slug}.${k}`
      const request = { key: `${PREFIX}race.${server.slug}.${k}`, body: JSON.stringify({ ...ORDER, ref }), ref }
      refs.push(request)
      const answers = await Promise.allSettled(Array.from({ length: RACE_COPIES }, () => post(port, request, agent)))
      statuses.push(...answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : 'error')))
    }
  } finally {
    agent.destroy()
  }
  await sleep(200) // writes a library makes after answering (express-idempotency stores then)
  const runs = await server.process.runs()
  const rows = await rowsByRef(db, since)
  return {
    runs: span(refs.map(({ ref }) => runs[ref] ?? 0)),
    rows: span(refs.map(({ ref }) => rows[ref] ?? 0)),
    statuses: countStatuses(statuses),
    first: refs[0],
  }
}

/** The first race key again, with another body. */
async function otherBody(server, db) {
  const since = await lastIds(db)
  const ref = `${server.race.first.ref}.other`
  const status = await post(server.process.port, { key: server.race.first.key, body: JSON.stringify({ ...ORDER, amount: 9999, ref }), ref }).catch(() => 'error')
  const ran = (await server.process.runs())[ref] ?? 0
  return `${status}${ran > 0 ? ' (ran)' : ''}${(await rowsSince(db, since)) > 0 ? ', row added' : ''}`
}

/**
 * The server restarted with PEERS_CRASH_REF, so that it SIGKILLs itself right after the
 * INSERT of this request, and the same request retried on a fresh process of the same
 * server (the restart; started beforehand, so that its start-up is not counted) every
 * 250 ms until it is answered with neither 409 nor 5xx, for up to CRASH_WAIT_S.
 */
async function crash(server, db) {
  const ref = `${RUN}.crash.${server.slug}`
  const request = { key: `${PREFIX}crash.${server.slug}`, body: JSON.stringify({ ...ORDER, ref }), ref }
  await server.process.stop()
  const [crashing, restarted] = await Promise.all([startServer(server, { PEERS_CRASH_REF: ref }), startServer(server)])
  server.process = restarted
  const since = await lastIds(db)
  const first = await post(crashing.port, request).then(
    (status) => `answered ${status}, did not crash; `,
    () => '',
  )
  const crashedAt = performance.now()
  if (first === '') await crashing.exited
  else await crashing.stop()
  const seen = []
  let usableS
  while ((performance.now() - crashedAt) / 1000 < CRASH_WAIT_S) {
    const status = await post(restarted.port, request).catch(() => 'error')
    if (seen.at(-1) !== status) seen.push(status)
    if (typeof status === 'number' && status !== 409 && status < 500) {
      usableS = (performance.now() - crashedAt) / 1000
      break
    }
    await sleep(250)
  }
  const rows = (await rowsByRef(db, since))[ref] ?? 0
  const statuses = seen.join(' → ')
  const retry = usableS === undefined ? `${statuses} for > ${CRASH_WAIT_S} s` : `${statuses} at ${usableS.toFixed(1)} s`
  return `${first}${retry}, ${rows} row${rows === 1 ? '' : 's'}`
}

// ---- output ----

function printTables(servers) {
  const pad = (text, width) => String(text).padEnd(width)
  const lpad = (text, width) => String(text).padStart(width)
  for (const framework of FRAMEWORKS) {
    const rows = servers.filter((server) => server.framework === framework)
    if (rows.length === 0) continue
    const baseline = summary(rows.find((server) => server.variant === 'unprotected').samples.fresh)
    console.log(`\n${framework}: throughput (median of ${ROUNDS} round(s), min–max; × = against ${framework} unprotected)`)
    console.log(
      `  ${pad('variant', 36)}${lpad('fresh req/s', 12)} ${pad('(min–max)', 13)}${lpad('p50', 5)}${lpad('p99', 6)}${lpad('×', 6)}${lpad('CPU µs', 8)}` +
        `${lpad('replay req/s', 14)} ${pad('(min–max)', 13)}${lpad('×', 6)}  replay rows`,
    )
    for (const server of rows) {
      const fresh = summary(server.samples.fresh)
      const replay = summary(server.samples.replay)
      const bad = [fresh, replay].filter((s) => s?.bad > 0).map((s) => JSON.stringify(s.statuses))
      console.log(
        `  ${pad(VARIANTS[server.variant].label, 36)}${lpad(fresh.rate.toFixed(0), 12)} ${pad(`(${fresh.min.toFixed(0)}–${fresh.max.toFixed(0)})`, 13)}` +
          `${lpad(fresh.p50, 5)}${lpad(fresh.p99, 6)}${lpad((fresh.rate / baseline.rate).toFixed(2), 6)}${lpad(server.samples.freshCpuPerRequest.toFixed(0), 8)}` +
          (replay === undefined
            ? `${lpad('—', 14)}`
            : `${lpad(replay.rate.toFixed(0), 14)} ${pad(`(${replay.min.toFixed(0)}–${replay.max.toFixed(0)})`, 13)}${lpad((replay.rate / baseline.rate).toFixed(2), 6)}  ${server.replayRows === 0 ? 'none' : `${server.replayRows} added`}`) +
          (bad.length > 0 ? `   non-2xx or errors: ${bad.join(' ')}` : ''),
      )
    }
    console.log(`${framework}: correctness`)
    console.log(`  ${pad('variant', 36)}${pad('races: runs/key', 17)}${pad('rows/key', 10)}${pad('statuses', 26)}${pad('other body', 23)}crash after INSERT, restart, retry`)
    for (const server of rows) {
      const { runs, rows: raceRows, statuses } = server.race
      console.log(`  ${pad(VARIANTS[server.variant].label, 36)}${pad(runs, 17)}${pad(raceRows, 10)}${pad(statuses, 26)}${pad(server.otherBody, 23)}${server.crash}`)
    }
  }
  console.log('\n(p50/p99 in ms; CPU µs = the server process\u2019s CPU per fresh request; crash: the statuses the retries got and when the key answered, in s from the SIGKILL, and the rows left)')
}

function printRatios(servers) {
  const freshOf = (framework, variant) => {
    const server = servers.find((s) => s.framework === framework && s.variant === variant)
    return server === undefined ? undefined : summary(server.samples.fresh).rate
  }
  const vsPeer = { idem_redis: [], idem_redis_prescribed: [] }
  const vsHand = []
  for (const framework of FRAMEWORKS) {
    const peers = Object.keys(VARIANTS)
      .filter((variant) => VARIANTS[variant].peer)
      .map((variant) => [variant, freshOf(framework, variant)])
      .filter(([, rate]) => rate !== undefined)
    const hand = freshOf(framework, 'hand_written')
    const idemPg = freshOf(framework, 'idem_pg')
    if (hand !== undefined && idemPg !== undefined) {
      vsHand.push(idemPg / hand)
      ratio(`peers.${framework}.idem_pg_vs_hand_written`, idemPg / hand)
    }
    if (peers.length === 0) continue
    const [bestName, best] = peers.reduce((a, b) => (b[1] > a[1] ? b : a))
    console.log(`(${framework}: the fastest peer, fresh, is ${VARIANTS[bestName].label}: ${best.toFixed(0)} req/s)`)
    for (const variant of Object.keys(vsPeer)) {
      const rate = freshOf(framework, variant)
      if (rate === undefined) continue
      vsPeer[variant].push(rate / best)
      ratio(`peers.${framework}.${variant}_vs_best_peer`, rate / best)
    }
  }
  // The headlines: the lowest over the frameworks measured (the targets hold on each).
  if (vsPeer.idem_redis_prescribed.length > 0) ratio('peers.idem_redis_prescribed_vs_best_peer', Math.min(...vsPeer.idem_redis_prescribed))
  if (vsPeer.idem_redis.length > 0) ratio('peers.idem_redis_vs_best_peer', Math.min(...vsPeer.idem_redis))
  if (vsHand.length > 0) ratio('peers.idem_pg_vs_hand_written', Math.min(...vsHand))
}

await main()
