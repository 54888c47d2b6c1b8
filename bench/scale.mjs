// bench:scale: where each backend's ceiling is for fresh keys, measured, not folklore.
// The engine alone (no HTTP), CONCURRENCY callers, a new key per call, a function that
// does nothing, against: Postgres (idem_keys, and partitioned by expiry day), MySQL /
// MariaDB (one server, idem_keys), Redis (one server), a Redis Cluster of 3 masters
// started here, and DynamoDB Local. For each:
// fresh keys per second, p99 latency, and the CPU each process spent per key (from
// /proc, so a shared 2-core machine's numbers can be read), then
// `RATIO scale.<backend>.keys_per_s_vs_postgres`. Last, the same load on clusters of 1,
// 2 and 3 masters, with the machine's CPU saturation beside each: on a small machine
// the curve flattens where the cores run out, and that is what it shows.
// Postgres and MySQL run the transactional engine (their mode), the others the leased
// engine. BENCH_ONLY (comma-separated: postgres, postgres_partitioned, mysql, redis,
// redis_cluster, dynamodb, cluster_curve) measures only those.
// Build first (`npm run build`): this runs over dist/.
import { spawn, spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { cpus, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import pg from 'pg'
import { Cluster, Redis } from 'ioredis'
import { cpuByPid, cpuLedger, dropRedisKeys, ratio } from './support.mjs'

const PG_URL = process.env.IDEM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const MYSQL_URL = process.env.IDEM_BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const REDIS_URL = process.env.IDEM_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const DYNAMODB_URL = process.env.IDEM_BENCH_DYNAMODB_URL ?? 'http://127.0.0.1:8000'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64)
const ONLY = process.env.BENCH_ONLY?.split(',')
const CORES = cpus().length
// What every call returns and stores: a small outcome, as a charge's.
const body = { chargeId: 'ch_1', amount: 1000 }

if (!existsSync(new URL('../dist/stores/dynamodb/index.js', import.meta.url))) {
  console.error('bench:scale runs over dist/: run `npm run build` first')
  process.exit(1)
}
const { createIdem, createLeasedIdem } = await import('../dist/index.js')
const { postgresStore } = await import('../dist/stores/postgres/index.js')
const { mysqlStore } = await import('../dist/stores/mysql/index.js')
const { redisStore } = await import('../dist/stores/redis/index.js')
const { dynamodbStore } = await import('../dist/stores/dynamodb/index.js')

const named = { [process.pid]: 'bench (engine)' }
const cleanups = []
const cleanup = async () => {
  for (const undo of cleanups.reverse()) await undo().catch((error) => console.error(`cleanup: ${error.message}`))
}
process.once('SIGINT', () => void cleanup().then(() => process.exit(130)))

try {
  await main()
} finally {
  await cleanup()
}

async function main() {
  console.log(
    `bench:scale: the engine, no HTTP; ${CONCURRENCY} concurrent callers, fresh keys, ${ROUNDS} × ${SECONDS} s per backend; ` +
      `${CORES} cores shared by every process (read the CPU per key, which carries over better than keys/s)`,
  )
  const backends = {
    postgres: () => postgresBackend('table'),
    postgres_partitioned: () => postgresBackend('daily-partitions'),
    mysql: mysqlBackend,
    redis: redisBackend,
    redis_cluster: () => clusterBackend(3),
    dynamodb: dynamoBackend,
  }
  // The cluster's redis-servers are named by pid, apart from the shared Redis on 6379.
  const ledger = cpuLedger(named)
  const results = {}
  for (const [name, open] of Object.entries(backends)) {
    if (ONLY !== undefined && !ONLY.includes(name)) continue
    const backend = await open()
    if (backend === undefined) continue
    try {
      await drive(backend.call, 0.5) // warm-up: connections, prepared statements, scripts, JIT
      const samples = []
      for (let round = 0; round < ROUNDS; round++) {
        await ledger.record(name, async () => {
          const sample = await drive(backend.call, SECONDS)
          samples.push(sample)
          return sample
        })
      }
      results[name] = samples.sort((a, b) => a.keys - b.keys)[samples.length >> 1] ?? samples[0]
      const r = results[name]
      console.log(`  ${name.padEnd(21)} ${r.keysPerSecond.toFixed(0).padStart(6)} keys/s   p50 ${r.p50.toFixed(1).padStart(6)} ms   p99 ${r.p99.toFixed(1).padStart(6)} ms   errors ${r.errors}`)
    } finally {
      await backend.close()
    }
  }
  console.log("CPU each process spent per fresh key ('other' and the shared services count every user of this machine):")
  ledger.print('key')
  // The seed's rule, 5,000 key writes per second on one primary, as what it costs the primary.
  const pgCost = ledger.micros?.('postgres', 'postgres')
  if (pgCost !== undefined) {
    console.log(
      `at 5,000 fresh keys/s idem's statements would take ${((5_000 * pgCost) / 1e6).toFixed(2)} cores of the Postgres primary ` +
        `(${pgCost.toFixed(0)} µs of Postgres CPU per key, measured here); see docs/scaling.md`,
    )
    ratio('scale.postgres.primary_cores_at_5k_keys_per_s', (5_000 * pgCost) / 1e6)
  }
  // The database server's CPU per fresh key, MySQL's over Postgres's (below 1: MySQL spends less).
  const mysqlCost = ledger.micros?.('mysql', 'mysql')
  if ((pgCost ?? 0) > 0 && (mysqlCost ?? 0) > 0) ratio('scale.mysql.server_cpu_per_key_vs_postgres', mysqlCost / pgCost)

  if (ONLY === undefined || ONLY.includes('cluster_curve')) await scalingCurve()

  const base = results.postgres?.keysPerSecond
  if (base !== undefined) {
    for (const [name, r] of Object.entries(results)) if (name !== 'postgres') ratio(`scale.${name}.keys_per_s_vs_postgres`, r.keysPerSecond / base)
  }
}

/** Runs `call` from CONCURRENCY loops for `seconds`, each call a fresh key. */
async function drive(call, seconds) {
  const latencies = []
  let errors = 0
  let firstError
  const until = performance.now() + seconds * 1000
  const started = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        const t = performance.now()
        try {
          await call(randomUUID())
          latencies.push(performance.now() - t)
        } catch (error) {
          errors++
          firstError ??= error
        }
      }
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  if (firstError !== undefined) console.log(`    (${errors} errors; the first: ${firstError.message})`)
  latencies.sort((a, b) => a - b)
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN
  return { value: latencies.length / elapsed, operations: latencies.length, keys: latencies.length, keysPerSecond: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), errors }
}

async function postgresBackend(keyLayout) {
  const schema = `idem_bench_scale_${keyLayout === 'table' ? 'plain' : 'daily'}_${process.pid}`
  const pool = new pg.Pool({ connectionString: PG_URL, max: Math.min(CONCURRENCY, 32), connectionTimeoutMillis: 10_000 })
  pool.on('error', () => {})
  try {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  } catch (error) {
    console.log(`  postgres (${keyLayout}): skipped, ${PG_URL} unreachable (${error.message})`)
    await pool.end()
    return undefined
  }
  const store = postgresStore({ pool, schema, keyLayout })
  await store.migrate()
  const idem = createIdem({ store })
  return {
    call: (key) => idem.run({ scope: 'bench', key, input: key }, async () => body),
    close: async () => {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await pool.end()
    },
  }
}

async function mysqlBackend() {
  const { default: mysql } = await import('mysql2/promise')
  const database = `idem_bench_scale_${process.pid}`
  const admin = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 1 })
  try {
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``)
    await admin.query(`CREATE DATABASE \`${database}\``)
  } catch (error) {
    console.log(`  mysql: skipped, ${MYSQL_URL} unreachable (${error.message})`)
    await admin.end()
    return undefined
  }
  const url = new URL(MYSQL_URL)
  url.pathname = `/${database}`
  const pool = mysql.createPool({ uri: url.toString(), connectionLimit: Math.min(CONCURRENCY, 32), charset: 'utf8mb4' })
  const store = mysqlStore({ pool })
  await store.migrate()
  const idem = createIdem({ store })
  return {
    call: (key) => idem.run({ scope: 'bench', key, input: key }, async () => body),
    close: async () => {
      await pool.end()
      await admin.query(`DROP DATABASE IF EXISTS \`${database}\``)
      await admin.end()
    },
  }
}

async function redisBackend() {
  const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
  client.on('error', () => {})
  try {
    await client.connect()
  } catch (error) {
    console.log(`  redis: skipped, ${REDIS_URL} unreachable (${error.message})`)
    client.disconnect()
    return undefined
  }
  const prefix = `idem-bench-scale:${process.pid}:`
  const idem = createLeasedIdem({ store: redisStore({ client, prefix }) })
  return {
    call: (key) => idem.run({ scope: 'bench', key, input: key }, async () => body),
    close: async () => {
      await dropRedisKeys(client, prefix)
      client.disconnect()
    },
  }
}

async function clusterBackend(masters) {
  const cluster = await startCluster(masters)
  if (cluster === undefined) return undefined
  for (const pid of cluster.pids) named[pid] = 'redis-cluster'
  const client = new Cluster(cluster.seeds, { scaleReads: 'master' })
  client.on('error', () => {})
  const idem = createLeasedIdem({ store: redisStore({ client, prefix: 'idem-bench-scale:' }) })
  return {
    pids: cluster.pids,
    call: (key) => idem.run({ scope: 'bench', key, input: key }, async () => body),
    close: async () => {
      client.disconnect()
      await cluster.stop()
    },
  }
}

async function dynamoBackend() {
  let sdk
  try {
    sdk = await import('@aws-sdk/client-dynamodb')
  } catch {
    console.log('  dynamodb: skipped, @aws-sdk/client-dynamodb is not installed')
    return undefined
  }
  let endpoint = DYNAMODB_URL
  if (!(await dynamoAnswers(sdk, endpoint))) {
    const local = await startDynamoLocal(sdk).catch((error) => {
      console.log(`  dynamodb: skipped, no DynamoDB Local at ${DYNAMODB_URL} and none could be started (${error.message})`)
      return undefined
    })
    if (local === undefined) return undefined
    cleanups.push(local.stop)
    endpoint = local.endpoint
  }
  const client = new sdk.DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'idem', secretAccessKey: 'idem' }, endpoint })
  const table = `idem_bench_scale_${process.pid}`
  const store = dynamodbStore({ client, table, timeoutMs: 5_000 })
  await store.createTable()
  const idem = createLeasedIdem({ store })
  return {
    call: (key) => idem.run({ scope: 'bench', key, input: key }, async () => body),
    close: async () => {
      await client.send(new sdk.DeleteTableCommand({ TableName: table })).catch(() => {})
      client.destroy()
    },
  }
}

/** The same load on clusters of 1, 2 and 3 masters, with the machine's CPU saturation beside each. */
async function scalingCurve() {
  console.log(`Redis Cluster, 1 → 3 masters (${CORES} cores; saturation = CPU used by every process / (${CORES} × wall time)):`)
  const curve = []
  for (const masters of [1, 2, 3]) {
    const backend = await clusterBackend(masters)
    if (backend === undefined) return
    try {
      await drive(backend.call, 0.5)
      const before = cpuByPid(named)
      const t = performance.now()
      const result = await drive(backend.call, SECONDS)
      const wall = (performance.now() - t) * 1000
      const after = cpuByPid(named)
      const spent = (label) => {
        if (before === undefined || after === undefined) return NaN
        let sum = 0
        for (const [pid, used] of after) if (label === undefined || used.label === label) sum += used.micros - (before.get(pid)?.micros ?? 0)
        return sum
      }
      const used = spent(undefined)
      const bench = spent('bench (engine)')
      const perKey = (label) => (spent(label) / result.keys).toFixed(0)
      curve.push(result.keysPerSecond)
      console.log(
        `  ${masters} master${masters > 1 ? 's' : ' '}  ${result.keysPerSecond.toFixed(0).padStart(6)} keys/s   p99 ${result.p99.toFixed(1).padStart(6)} ms   ` +
          `machine CPU ${((100 * used) / (CORES * wall)).toFixed(0).padStart(3)}%   (the driving process alone ${((100 * bench) / wall).toFixed(0)}% of one core; ` +
          `per key: engine ${perKey('bench (engine)')} µs, cluster ${perKey('redis-cluster')} µs)`,
      )
    } finally {
      await backend.close()
    }
  }
  ratio('scale.redis_cluster.keys_per_s_3_vs_1_masters', curve[2] / curve[0])
}

/** A Redis Cluster of `masters` masters (no replicas, no persistence) on free loopback ports. */
async function startCluster(masters) {
  for (const tool of ['redis-server', 'redis-cli']) {
    if (spawnSync(tool, ['--version']).status !== 0) {
      console.log(`  redis cluster: skipped, ${tool} is not installed`)
      return undefined
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'idem-bench-cluster-'))
  const servers = []
  const ports = []
  const buses = []
  const stop = async () => {
    for (const server of servers) {
      if (server.exitCode !== null || server.signalCode !== null) continue
      const gone = new Promise((resolve) => server.once('exit', resolve))
      server.kill('SIGKILL')
      await gone
    }
    rmSync(dir, { recursive: true, force: true })
  }
  cleanups.push(stop)
  for (let i = 0; i < masters; i++) {
    const [port, bus] = [await freePort(), await freePort()]
    ports.push(port)
    buses.push(bus)
    servers.push(
      spawn(
        'redis-server',
        ['--port', String(port), '--cluster-port', String(bus), '--bind', '127.0.0.1', '--cluster-announce-ip', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`,
          '--dir', dir, '--save', '', '--appendonly', 'no'],
        { stdio: 'ignore' },
      ),
    )
  }
  for (const port of ports) await until(`redis-server ${port}`, async () => (await ask(port, 'PING')) === 'PONG')
  // redis-cli --cluster create wants 3 masters or more: the slots are split and the
  // nodes met by hand instead, the same way for every size.
  const per = Math.ceil(16384 / masters)
  for (const [i, port] of ports.entries()) {
    await ask(port, 'CLUSTER', 'ADDSLOTSRANGE', String(i * per), String(Math.min(16383, (i + 1) * per - 1)))
    if (i > 0) await ask(port, 'CLUSTER', 'MEET', '127.0.0.1', String(ports[0]), String(buses[0]))
  }
  await until('cluster_state:ok', async () => {
    for (const port of ports) if (!(await ask(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false
    return true
  })
  return { seeds: ports.map((port) => ({ host: '127.0.0.1', port })), pids: servers.map((s) => s.pid), stop: async () => {
    cleanups.splice(cleanups.indexOf(stop), 1)
    await stop()
  } }
}

async function ask(port, ...command) {
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {})
  try {
    await probe.connect()
    return String(await probe.call(command[0], ...command.slice(1)))
  } catch {
    return ''
  } finally {
    probe.disconnect()
  }
}

async function until(what, check, ms = 30_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

async function dynamoAnswers(sdk, endpoint) {
  const client = new sdk.DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'idem', secretAccessKey: 'idem' }, endpoint, maxAttempts: 1 })
  try {
    await client.send(new sdk.ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(2_000) })
    return true
  } catch {
    return false
  } finally {
    client.destroy()
  }
}

/** DynamoDB Local from the amplify-dynamodb-simulator dev dependency, in memory, telemetry off, on a free port. */
async function startDynamoLocal(sdk) {
  const require = createRequire(import.meta.url)
  const dir = join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator')
  const port = await freePort()
  const child = spawn(
    'java',
    [`-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`, '-jar', join(dir, 'DynamoDBLocal.jar'), '-inMemory', '-disableTelemetry', '-port', String(port)],
    { cwd: dir, stdio: 'ignore', env: { ...process.env, DDB_LOCAL_TELEMETRY: '0' } },
  )
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.once('error', () => {})
  const endpoint = `http://127.0.0.1:${port}`
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  }
  try {
    await until('DynamoDB Local', () => dynamoAnswers(sdk, endpoint), 60_000)
  } catch (error) {
    await stop()
    throw error
  }
  return { endpoint, stop }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })
}
