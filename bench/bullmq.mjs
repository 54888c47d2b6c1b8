// bench:bullmq: jobs/s through a BullMQ worker whose processor uses idem's inbox
// (bullmqProcessor) vs hand-written processors doing the same: each job is one Postgres
// transaction inserting one row. `bare` records nothing; `dedupe_floor` records the job
// id in a narrow table of ids in the same transaction; `hand_written` writes the inbox's
// own row of idem_inbox by hand, with the store's statement, in the round trip of BEGIN,
// and inserts only if it wrote it: the ceiling of this inbox, without idem's code. A
// backlog is added first, then each variant's worker consumes it for BENCH_SECONDS;
// variants are interleaved over BENCH_ROUNDS (every other round reversed) and the
// medians compared, with each variant's CPU per job by process (the bench's own process
// is the worker).
import { Queue, Worker } from 'bullmq'
import { randomUUID } from 'node:crypto'
import { bullmqProcessor } from '../dist/queue/bullmq/index.js'
import { createInbox, DEFAULT_INBOX_RETENTION_MS } from '../dist/queue/index.js'
import { inboxMarkByHand, queueBenchDatabase } from './queue-database.mjs'
import { cpuLedger, interleaved, ratio } from './support.mjs'

const REDIS_URL = process.env.IDEM_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6)
const CONCURRENCY = 16
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 20_000)
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 1_000)
const connection = { host: new URL(REDIS_URL).hostname, port: Number(new URL(REDIS_URL).port || 6379) }

const database = await queueBenchDatabase('idem_bench_bullmq', CONCURRENCY + 2)
const { pool, schema, store, insert } = database
await pool.query(`CREATE TABLE ${schema}.seen (id text PRIMARY KEY)`)

/** A processor that runs `transaction(client, job)` on a pool client, from BEGIN to COMMIT (ROLLBACK on a throw). */
function byHand(transaction) {
  return async (job) => {
    const client = await pool.connect()
    try {
      await transaction(client, job)
    } catch (error) {
      await client.query('ROLLBACK')
      throw error
    } finally {
      client.release()
    }
  }
}

/** The bare processor: the insert in a transaction, nothing recorded. */
const bare = () =>
  byHand(async (client, job) => {
    await client.query('BEGIN')
    await insert(client, job.data, job.id)
    await client.query('COMMIT')
  })

// Pool clients that have the hand-written record's statement prepared (it outlives each run's worker).
const prepared = new WeakSet()

/**
 * The bare processor that first records the job id by hand: `record(literal)` is sent in
 * BEGIN's round trip (after `prepare`, once per connection, if given), and the insert
 * runs only if it wrote a row. No expiry check, wait limit or failure count: a measure
 * of what recording costs, not a usable inbox.
 */
const recording = (record, prepare) => () =>
  byHand(async (client, job) => {
    const first = prepare === undefined || prepared.has(client) ? '' : `${prepare}; `
    const results = await client.query(`BEGIN; ${first}${record(client.escapeLiteral(job.id))}`)
    if (prepare !== undefined) prepared.add(client)
    if (results[results.length - 1].rowCount === 1) await insert(client, job.data, job.id)
    await client.query('COMMIT')
  })

const dedupeFloor = recording((id) => `INSERT INTO ${schema}.seen (id) VALUES (${id}) ON CONFLICT DO NOTHING`)
const inboxMark = inboxMarkByHand(schema)
const handWritten = recording((id) => inboxMark.execute(`'claims-intake'`, id, DEFAULT_INBOX_RETENTION_MS), inboxMark.prepare)

/** The same processor through idem's inbox. Its handler returns nothing, as the others do: BullMQ stores what it returns. */
const withInbox = () =>
  bullmqProcessor({
    inbox: createInbox({ store, consumer: 'claims-intake' }),
    handler: async (tx, job) => {
      await insert(tx, job.data, job.id)
    },
  })

const count = async () => Number((await pool.query(`SELECT count(*) AS n FROM ${schema}.claims`)).rows[0].n)
let runs = 0

/** One variant's worker over a fresh queue's backlog for `seconds`; returns jobs/s, its CPU recorded under `name`. */
async function measure(variant, seconds, machine, name) {
  const run = ++runs
  const queue = new Queue(`idem_bench_${randomUUID()}`, { connection })
  for (let start = 0; start < BACKLOG; start += 1000) {
    const jobs = []
    // Ids of their own per run, as new jobs have: the inbox never meets a recorded one.
    for (let i = start; i < Math.min(BACKLOG, start + 1000); i++) jobs.push({ name: 'claim', data: { amount: i % 100 }, opts: { jobId: `r${run}-${i}`, removeOnComplete: true } })
    await queue.addBulk(jobs)
  }
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
  await pool.query(`TRUNCATE ${schema}.claims, ${schema}.seen, ${schema}.idem_inbox`)
  let done = 0
  const elapsed = await machine.record(name, async () => {
    const started = performance.now()
    const worker = new Worker(queue.name, variant(), { connection, concurrency: CONCURRENCY })
    const until = started + seconds * 1000
    while (performance.now() < until && done < BACKLOG) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      done = await count()
    }
    const value = (performance.now() - started) / 1000
    await worker.close()
    return { value, operations: done }
  })
  await queue.obliterate({ force: true })
  await queue.close()
  if (done >= BACKLOG) console.warn(`  (the backlog of ${BACKLOG} ran out; raise BENCH_BACKLOG)`)
  return done / elapsed
}

const variants = { bare, dedupe_floor: dedupeFloor, hand_written: handWritten, inbox: withInbox }
// Warm-up, not counted: the JIT, the pool's connections, prepared statements, BullMQ's scripts.
const warmUp = cpuLedger({})
for (const [name, variant] of Object.entries(variants)) await measure(variant, 1, warmUp, name)
const machine = cpuLedger({ [process.pid]: 'worker' })
const rates = await interleaved(variants, ROUNDS, (variant, name) => measure(variant, SECONDS, machine, name))
console.log(
  `bullmq: bare ${rates.bare.toFixed(0)} jobs/s, dedupe floor ${rates.dedupe_floor.toFixed(0)} jobs/s, ` +
    `hand-written record ${rates.hand_written.toFixed(0)} jobs/s, inbox ${rates.inbox.toFixed(0)} jobs/s ` +
    `(${CONCURRENCY} at once, ${SECONDS} s × ${ROUNDS} rounds)`,
)
machine.print('job')
await database.drop()
for (const [measured, over] of [['dedupe_floor', 'bare'], ['hand_written', 'bare'], ['inbox', 'hand_written'], ['inbox', 'bare']]) {
  ratio(`queue.bullmq.${measured}_vs_${over}`, rates[measured] / rates[over])
}
// The worker's own CPU per job (this process), inbox over hand-written: what idem's code
// costs the worker. Postgres and Redis are left out of the ratio (their lines above show
// them): on a shared machine other people's tests use the same servers.
ratio('queue.bullmq.worker_cpu_per_job.inbox_vs_hand_written', machine.micros('inbox', 'worker') / machine.micros('hand_written', 'worker'))
