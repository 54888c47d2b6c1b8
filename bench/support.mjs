// Shared by the benches: timing loops and the RATIO lines runs are compared by.
import { readdirSync, readFileSync } from 'node:fs'

/**
 * Runs `op` from `concurrency` loops for `ms` milliseconds; `op` gets a number of its own.
 * @returns `{ value: operations per second, operations }`, as `cpuLedger().record` takes it
 */
export async function throughput(op, { concurrency, ms }) {
  let done = 0
  let i = 0
  const until = performance.now() + ms
  const loop = async () => {
    while (performance.now() < until) {
      await op(i++)
      done++
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, loop))
  return { value: done / ((performance.now() - started) / 1000), operations: done }
}

/** Median of the values. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * Measures every variant `rounds` times, interleaved so drift in the machine's load hits
 * all of them alike, and returns each variant's median. Every other round runs in
 * reverse order (a b c, c b a, …): whatever a run leaves behind (a table grown, a
 * vacuum started, a queue being deleted) then weighs on every position alike, instead
 * of always on the variant measured last.
 */
export async function interleaved(variants, rounds, measure) {
  const samples = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
  const forward = Object.entries(variants)
  const backward = [...forward].reverse()
  for (let round = 0; round < rounds; round++) {
    for (const [name, variant] of round % 2 === 0 ? forward : backward) samples[name].push(await measure(variant, name))
  }
  return Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)]))
}

export function ratio(name, value, digits = 2) {
  console.log(`RATIO ${name} ${value.toFixed(digits)}`)
}

/**
 * CPU time used so far on this machine, by who used it (Linux only; `undefined`
 * elsewhere): `named` maps process ids to labels (the bench's server, its driver);
 * other processes count as `postgres`, `mysql`, `redis`, `rabbitmq`, `nats`, `kafka`, `kernel` (its
 * threads) or `other`. Read from each thread's /proc schedstat (nanoseconds on a CPU),
 * so a 2-core machine's throughput can be explained: every process shares the cores.
 * @returns microseconds by label
 */
export function machineCpu(named = {}) {
  const byPid = cpuByPid(named)
  if (byPid === undefined) return undefined
  const used = {}
  for (const { label, micros } of byPid.values()) used[label] = (used[label] ?? 0) + micros
  return used
}

/**
 * CPU time used so far by each process (Linux only): pid → `{ label, micros }`, labelled
 * as `machineCpu` labels them. Differences of two of these count only processes alive
 * at the end, so a process that ended meanwhile cannot make a difference negative.
 */
export function cpuByPid(named = {}) {
  let pids
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name))
  } catch {
    return undefined
  }
  const used = new Map()
  for (const pid of pids) {
    let label = named[pid]
    let nanos = 0
    try {
      if (label === undefined) label = groupOf(readFileSync(`/proc/${pid}/comm`, 'utf8').trim(), pid)
      if (label === 'mysql') nanos = processNanos(pid)
      else for (const task of readdirSync(`/proc/${pid}/task`)) nanos += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      continue // the process ended meanwhile
    }
    used.set(pid, { label, micros: nanos / 1000 })
  }
  return used
}

/**
 * CPU time of a whole process, its ended threads included (/proc/<pid>/stat's utime and
 * stime, in clock ticks of 10 ms): for a server with a thread per connection (MariaDB,
 * MySQL), whose threads end with their connections, so that the sum over its live
 * threads would drop whenever another user's connection closes.
 */
function processNanos(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // After the command, in parentheses: the state, then utime and stime as the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 1e7
}

function groupOf(command, pid) {
  if (command === 'postgres') return 'postgres'
  if (command === 'mariadbd' || command === 'mysqld') return 'mysql'
  if (command.startsWith('redis-server')) return 'redis'
  if (command === 'beam.smp' || command.startsWith('erl_')) return 'rabbitmq'
  if (command === 'nats-server') return 'nats'
  if (command === 'kcat') return 'kafka' // librdkafka's mock cluster, in kcat's process
  // DynamoDB Local is a Java process.
  if (command === 'java') return 'dynamodb-local'
  // Kernel threads have no command line.
  try {
    if (readFileSync(`/proc/${pid}/cmdline`).length === 0) return 'kernel'
  } catch {
    return 'other'
  }
  return 'other'
}

/**
 * Accumulates what `machineCpu` says each variant's runs used, per operation, and
 * prints it: the CPU a variant costs the whole machine, which on a shared 2-core VM
 * varies less between runs than throughput does.
 */
export function cpuLedger(named) {
  const totals = {}
  return {
    /** Runs `measure` (which resolves with `{ value, operations }`) and records the CPU it used under `name`. */
    async record(name, measure) {
      const before = cpuByPid(named)
      const result = await measure()
      const after = cpuByPid(named)
      if (before !== undefined && after !== undefined) {
        const entry = (totals[name] ??= { operations: 0, micros: {} })
        entry.operations += result.operations
        // Per process: one that started meanwhile counts from zero, one that ended is left out.
        for (const [pid, { label, micros }] of after) entry.micros[label] = (entry.micros[label] ?? 0) + micros - (before.get(pid)?.micros ?? 0)
      }
      return result.value
    },
    /** µs of CPU per operation that `label` spent in variant `name` (undefined when not measured). */
    micros(name, label) {
      const entry = totals[name]
      return entry === undefined || entry.operations === 0 ? undefined : (entry.micros[label] ?? 0) / entry.operations
    },
    /** Prints one line per variant: µs of CPU per operation, by process group, and their sum. */
    print(unit) {
      for (const [name, { operations, micros }] of Object.entries(totals)) {
        const parts = Object.entries(micros)
          .filter(([, value]) => value / operations >= 0.5)
          .sort((a, b) => b[1] - a[1])
          .map(([label, value]) => `${label} ${(value / operations).toFixed(0)}`)
        const sum = Object.values(micros).reduce((a, b) => a + b, 0) / operations
        console.log(`  ${name.padEnd(16)} machine CPU per ${unit}: ${sum.toFixed(0).padStart(4)} µs (${parts.join(', ')})`)
      }
    },
  }
}

/** Deletes every Redis key under `prefix` (a bench's own), a page of SCAN at a time. */
export async function dropRedisKeys(client, prefix) {
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    if (keys.length > 0) await client.unlink(...keys)
    cursor = next
  } while (cursor !== '0')
}

/**
 * Nanoseconds of CPU per call of `op`, over about `ms` milliseconds: CPU time, not wall
 * time, so that other processes on a shared machine weigh less. `valid` checks the last
 * result, so the calls cannot be optimised away unnoticed.
 */
export function cpuNanosPerCall(op, ms, valid) {
  let calls = 0
  let sink
  const cpu = process.cpuUsage()
  const until = performance.now() + ms
  while (performance.now() < until) {
    for (let i = 0; i < 100; i++) sink = op()
    calls += 100
  }
  const used = process.cpuUsage(cpu)
  if (!valid(sink)) throw new Error(`cpuNanosPerCall: an unexpected result (${String(sink).slice(0, 40)})`)
  return ((used.user + used.system) * 1000) / calls
}
