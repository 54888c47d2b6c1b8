// bench:prune: retention at scale. PRUNE_KEYS (default 1,000,000) expired Postgres keys
// are pruned by `idem prune` (the CLI, in its own process) while another client keeps
// inserting fresh keys through the engine. Prints the inserts' p99 before and during the
// prune, the pruner's rate, and checks that no insert failed and no live key was removed.
// Bounded: the inserter stops when the prune ends, or after PRUNE_MAX_SECONDS.
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { promisify } from 'node:util'
import pg from 'pg'
import { createIdem } from '../dist/index.js'
import { postgresStore } from '../dist/stores/postgres/index.js'

const PG_URL = process.env.IDEM_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const KEYS = Number(process.env.PRUNE_KEYS ?? 1_000_000)
const LIVE = Number(process.env.PRUNE_LIVE ?? 10_000)
const BATCH = Number(process.env.PRUNE_BATCH ?? 5_000)
const INSERTERS = Number(process.env.PRUNE_INSERTERS ?? 2)
const BASELINE_SECONDS = Number(process.env.PRUNE_BASELINE_SECONDS ?? 3)
const MAX_SECONDS = Number(process.env.PRUNE_MAX_SECONDS ?? 300)
const cli = new URL('../dist/cli/idem.js', import.meta.url).pathname
const run = promisify(execFile)

// PRUNE_SCHEMA: a schema the caller made (and drops); otherwise one of this run's own.
const given = process.env.PRUNE_SCHEMA
const schema = given ?? `idem_bench_prune_${process.pid}`
const pool = new pg.Pool({ connectionString: PG_URL, max: INSERTERS + 2, connectionTimeoutMillis: 10_000 })
// As the docs ask of every app: an idle connection Postgres drops must not end the bench.
pool.on('error', (error) => console.error(`idle Postgres connection failed: ${error.message}`))
const count = async (where) => Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".idem_keys WHERE ${where}`)).rows[0].n)

try {
  if (given === undefined) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; CREATE SCHEMA "${schema}"`)
  const store = postgresStore({ pool, schema })
  await store.migrate()
  let started = performance.now()
  // Expired an hour ago, oldest first, as a day of real traffic leaves them.
  for (let from = 0; from < KEYS; from += 250_000) {
    const to = Math.min(KEYS, from + 250_000)
    await pool.query(
      `INSERT INTO "${schema}".idem_keys (scope, key, fingerprint, outcome, created_at, expires_at)
       SELECT 'acct_' || (g % 1000), 'old-' || g, md5(g::text), '{"status":201,"headers":[],"bodyBase64":"e30="}',
              now() - interval '25 hours' + g * interval '1 ms', now() - interval '1 hour' + g * interval '1 ms' * 0.001
       FROM generate_series($1::int, $2::int - 1) g`,
      [from, to],
    )
  }
  await pool.query(
    `INSERT INTO "${schema}".idem_keys (scope, key, fingerprint, outcome, expires_at)
     SELECT 'acct_' || (g % 1000), 'live-' || g, md5(g::text), 'null', now() + interval '1 day' FROM generate_series(1, $1::int) g`,
    [LIVE],
  )
  await pool.query(`VACUUM ANALYZE "${schema}".idem_keys`)
  console.log(`prune bench: ${KEYS.toLocaleString('en-US')} expired keys and ${LIVE.toLocaleString('en-US')} live ones written in ${((performance.now() - started) / 1000).toFixed(1)} s`)

  const idem = createIdem({ store })
  const latencies = { before: [], during: [] }
  let phase = 'before'
  let inserted = 0
  let failed = 0
  let stop = false
  const inserter = async () => {
    while (!stop) {
      const t = performance.now()
      try {
        await idem.run({ scope: 'fresh', key: randomUUID(), input: { n: inserted } }, async (tx) => {
          await tx.query('SELECT 1')
          return { status: 201 }
        })
        inserted++
        latencies[phase].push(performance.now() - t)
      } catch (error) {
        failed++
        if (failed <= 3) console.error('insert failed:', error.message)
      }
    }
  }
  const inserters = Array.from({ length: INSERTERS }, inserter)
  await new Promise((resolve) => setTimeout(resolve, BASELINE_SECONDS * 1000))
  phase = 'during'
  const insertedBefore = inserted
  started = performance.now()
  const deadline = setTimeout(() => (stop = true), MAX_SECONDS * 1000)
  const { stdout } = await run(process.execPath, [cli, 'prune', '--postgres', PG_URL, '--schema', schema, '--batch-size', String(BATCH), '--json'], {
    timeout: MAX_SECONDS * 1000,
  })
  const pruneSeconds = (performance.now() - started) / 1000
  stop = true
  clearTimeout(deadline)
  await Promise.all(inserters)
  const report = JSON.parse(stdout)

  const p = (values, q) => {
    const sorted = [...values].sort((a, b) => a - b)
    return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  }
  const liveLeft = await count(`key LIKE 'live-%'`)
  const freshLeft = await count(`scope = 'fresh'`)
  const expiredLeft = await count(`expires_at <= now() AND key LIKE 'old-%'`)
  const line = (label, value) => console.log(`${label.padEnd(44)} ${value}`)
  line('expired keys pruned', `${report.deleted.toLocaleString('en-US')} of ${KEYS.toLocaleString('en-US')} (left: ${expiredLeft})`)
  line('pruner rate (idem prune, batch ' + BATCH + ')', `${report.perSecond.toLocaleString('en-US')} keys/s over ${report.seconds.toFixed(1)} s, ${report.batches} batches`)
  line('inserts before the prune', `${insertedBefore} in ${BASELINE_SECONDS} s, p50 ${p(latencies.before, 0.5).toFixed(2)} ms, p99 ${p(latencies.before, 0.99).toFixed(2)} ms`)
  line('inserts during the prune', `${latencies.during.length} in ${pruneSeconds.toFixed(1)} s, p50 ${p(latencies.during, 0.5).toFixed(2)} ms, p99 ${p(latencies.during, 0.99).toFixed(2)} ms`)
  line('inserts failed', String(failed))
  line('live keys removed', `${LIVE - liveLeft} of ${LIVE} older live keys, ${inserted - freshLeft} of ${inserted} fresh keys`)
  const ok = failed === 0 && liveLeft === LIVE && freshLeft === inserted && expiredLeft === 0 && latencies.during.length > 0
  console.log(ok ? 'prune bench: every insert succeeded throughout, every expired key went, every live key stayed' : 'prune bench: FAIL')
  console.log(`RATIO prune.pg.insert_p99_during_vs_before ${(p(latencies.during, 0.99) / p(latencies.before, 0.99)).toFixed(2)}`)
  console.log(`RATIO prune.pg.keys_per_second ${report.perSecond}`)
  process.exitCode = ok ? 0 : 1
} finally {
  if (given === undefined) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {})
  await pool.end()
}
