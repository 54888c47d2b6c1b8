// Shared by the benches that drive a real HTTP server with autocannon (bench:http,
// bench:redis): the server runs in a child process, so that autocannon does not share
// its event loop, and reports its own CPU time; variants are measured interleaved.
import autocannon from 'autocannon'
import { fork, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { cpuByPid, cpuLedger, interleaved } from './support.mjs'

const PORTS_LINE = 'BENCH-PORTS '

/**
 * In the child: answers the parent's CPU readings and exits with it. `ports` (what the
 * parent's `startServer` resolves with) is sent once everything listens.
 */
export function serveParent(ports) {
  if (process.send === undefined) {
    // Started by `startServerOn` (Bun, Deno: no IPC channel to Node): the ports on stdout,
    // the CPU read from /proc by the parent, and SIGTERM to end.
    process.stdout.write(`${PORTS_LINE}${JSON.stringify(ports)}\n`)
    return
  }
  process.on('message', (message) => message === 'cpu' && process.send({ cpu: process.cpuUsage() }))
  process.send(ports)
  process.on('disconnect', () => process.exit(0))
}

/**
 * In the parent: forks `script` with `--serve` and waits for its ports.
 * @returns `{ ports, pid, serverCpu() (µs used so far), stop() }`
 */
export async function startServer(script, env) {
  const child = fork(script, ['--serve'], { env: { ...process.env, ...env } })
  const ports = await new Promise((resolve, reject) => {
    child.once('message', resolve)
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)))
  })
  return {
    ports,
    pid: child.pid,
    serverCpu: () =>
      new Promise((resolve) => {
        child.once('message', ({ cpu }) => resolve(cpu.user + cpu.system))
        child.send('cpu')
      }),
    stop: async () => {
      child.disconnect()
      await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve()))
    },
  }
}

/**
 * In the parent: starts `script --serve` on another runtime (`runtime` from
 * tools/runtimes/runtimes.mjs: Bun, Deno) and waits for its ports. Its CPU is read from
 * /proc (Linux), as `machineCpu` reads every process's.
 * @returns the same as `startServer`
 */
export async function startServerOn(runtime, script, env) {
  const child = spawn(runtime.argv[0], [...runtime.argv.slice(1), script, '--serve'], { env: { ...runtime.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  const ports = await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      out += chunk
      const line = out.split('\n').find((l) => l.startsWith(PORTS_LINE))
      if (line !== undefined) resolve(JSON.parse(line.slice(PORTS_LINE.length)))
    })
    child.once('exit', (code) => reject(new Error(`${runtime.label} bench server exited with ${code}`)))
  })
  return {
    ports,
    pid: child.pid,
    serverCpu: async () => cpuByPid({})?.get(String(child.pid))?.micros ?? 0,
    stop: async () => {
      if (child.exitCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    },
  }
}

/**
 * The protected variants of a route: `fresh` sends a new Idempotency-Key with every
 * request; `replay` retries keys that fresh requests stored, as clients retrying their
 * own requests would (not many clients retrying one key at once); with `elsewhere` (the
 * URL of a second instance of the same app, with its own store object on the same
 * database), `replay_elsewhere` sends those retries there, as a load balancer may.
 */
export function keyedVariants(path, headers, connections, elsewhere) {
  const run = randomUUID().slice(0, 8)
  const keyOf = (i) => `"fresh-${run}-${i}"`
  let issued = 0
  let replayed = 0
  const retry = (request) => {
    // Keys whose first request has surely finished: all but the last few issued.
    const stored = Math.max(1, issued - 4 * connections)
    request.headers = { ...headers, 'idempotency-key': keyOf(replayed++ % stored) }
    return request
  }
  return {
    fresh: {
      path,
      headers,
      setupRequest: (request) => {
        request.headers = { ...headers, 'idempotency-key': keyOf(issued++) }
        return request
      },
    },
    replay: { path, headers, setupRequest: retry },
    ...(elsewhere !== undefined && { replay_elsewhere: { url: elsewhere, path, headers, setupRequest: retry } }),
    /** How many fresh keys were sent so far. */
    issued: () => issued,
  }
}

/**
 * Gives each request of a variant without keys an `X-Request-Id` of its own. Keyed
 * variants send a new header on every request, and autocannon then rebuilds every
 * request (measured: about 20–30 µs of its CPU a request, on the cores the server uses);
 * a constant request it would build once. With a header of their own per request, every
 * variant costs the load generator the same, and the ratios compare servers only.
 */
function withRequestId(headers) {
  const run = randomUUID().slice(0, 8)
  let sent = 0
  return (request) => {
    request.headers = { ...headers, 'x-request-id': `${run}-${sent++}` }
    return request
  }
}

/**
 * Runs every variant (`{ url?, path, headers, setupRequest? }`) against `url` (or its own) with autocannon:
 * a one-second warm-up each, then `rounds` interleaved runs of `seconds`. Any non-2xx
 * answer, error or timeout fails the bench. Prints each variant's median requests per
 * second, latency and the server's CPU per request, then what each request cost the
 * whole machine (the server `serverPid`, autocannon, the databases). With `cpuPerRequest`
 * (an object), fills it with each variant's µs of CPU per request by who spent it
 * (`server`, and the ledger's labels: `mysql`, `postgres`, `autocannon`, …).
 * @returns the median requests per second of each variant
 */
export async function measureVariants({ label, url, variants, body, rounds, seconds, connections, serverCpu, serverPid, afterWarmUp, cpuPerRequest }) {
  const measure = async (variant, name, duration) => {
    const result = await autocannon({
      url: variant.url ?? url,
      connections,
      duration,
      requests: [{ method: 'POST', path: variant.path, body, headers: variant.headers, setupRequest: variant.setupRequest ?? withRequestId(variant.headers) }],
    })
    const bad = result.non2xx + result.errors + result.timeouts
    if (bad > 0) throw new Error(`${label} ${name}: ${bad} of ${result.requests.total} requests failed (non-2xx, errors or timeouts): ${JSON.stringify(result.statusCodeStats)}`)
    return result
  }
  // Warm-up: JIT, pool connections, the planner's caches; and keys for the replays.
  for (const [name, variant] of Object.entries(variants)) await measure(variant, name, 1)
  afterWarmUp?.()

  const latencies = {}
  const cpu = Object.fromEntries(Object.keys(variants).map((name) => [name, { micros: 0, requests: 0 }]))
  const machine = cpuLedger({ [serverPid]: 'server', [process.pid]: 'autocannon' })
  const rates = await interleaved(variants, rounds, (variant, name) =>
    machine.record(name, async () => {
      const before = await serverCpu()
      const result = await measure(variant, name, seconds)
      cpu[name].micros += (await serverCpu()) - before
      cpu[name].requests += result.requests.total
      latencies[name] = result.latency
      return { value: result.requests.total / result.duration, operations: result.requests.total }
    }),
  )
  for (const [name, rate] of Object.entries(rates)) {
    const { p50, p99 } = latencies[name]
    const perRequest = cpu[name].micros / cpu[name].requests
    console.log(
      `${label.padEnd(8)} ${name.padEnd(16)} ${rate.toFixed(0).padStart(6)} req/s   p50 ${String(p50).padStart(2)} ms   p99 ${String(p99).padStart(3)} ms   server CPU ${perRequest.toFixed(0).padStart(4)} µs/req`,
    )
  }
  machine.print('request')
  if (cpuPerRequest !== undefined) {
    for (const name of Object.keys(variants)) {
      cpuPerRequest[name] = { server: cpu[name].micros / cpu[name].requests, of: (group) => machine.micros(name, group) }
    }
  }
  return rates
}
