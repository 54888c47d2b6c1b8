// BullMQ workers SIGKILLed mid-job (test/fixtures/bullmq-worker.mjs, one process each):
// BullMQ's stalled-job checker hands their jobs to the other workers, and the inbox makes
// each job's effect happen exactly once. Some kills come with a job held inside its open
// transaction, some with a job held after the inbox committed and before BullMQ heard of
// it, and each takes down the worker's other jobs wherever they were.
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Queue } from 'bullmq'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { BULLMQ_CONNECTION, eventually, reachRedis, unique } from './support.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/bullmq-worker.mjs', import.meta.url))
const JOBS = 240
const WORKERS = 3
// Held (and so killed) on their first delivery: one job in ten, half of them mid-transaction.
const HOLD_MID = Array.from({ length: JOBS }, (_, n) => n).filter((n) => n % 20 === 3)
const HOLD_COMMITTED = Array.from({ length: JOBS }, (_, n) => n).filter((n) => n % 20 === 13)

const admin = await reachRedis()
const db = admin ? await testSchema('idem_q_bullmq_stalled') : undefined

interface Said {
  type: 'ready' | 'mid' | 'committed'
  n?: number
  pid: number
}

describe.skipIf(db === undefined)('BullMQ workers SIGKILLed mid-job (real Redis and Postgres)', () => {
  const { pool, schema } = db as TestSchema
  const queue = new Queue(unique('idem_bullmq_stalled'), { connection: BULLMQ_CONNECTION })
  const children = new Set<ChildProcess>()
  beforeAll(async () => {
    await postgresStore({ pool, schema }).migrate()
    // No unique constraint: a second run of a job would show as a second row.
    await pool.query(`CREATE TABLE "${schema}".effects (n integer NOT NULL, job_id text NOT NULL, pid integer NOT NULL)`)
  })
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL')
    await queue.obliterate({ force: true })
    await queue.close()
    await db?.drop()
    admin?.disconnect()
  })

  it(`${JOBS} jobs, workers killed while holding them: each job's effect exactly once, none lost, none failed`, async () => {
    const config = {
      connection: BULLMQ_CONNECTION,
      pgUrl: PG_URL,
      schema,
      queue: queue.name,
      consumer: 'stalled-intake',
      holdMid: HOLD_MID,
      holdCommitted: HOLD_COMMITTED,
      // A dead worker's jobs are taken over after about lockDuration + 2 × stalledInterval.
      // With idem a job run again is safe, so more stalls than BullMQ's default 1 are allowed.
      worker: { concurrency: 4, lockDuration: 2_000, stalledInterval: 1_000, maxStalledCount: 20 },
    }
    const said: Said[] = []
    const killed = new Set<number>()
    const otherExits: string[] = []
    let spawned = 0
    const start = () => {
      if (++spawned > 60) throw new Error('more than 60 workers started: the kills never end')
      const child = spawn(process.execPath, [FIXTURE, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] })
      children.add(child)
      let stderr = ''
      child.stderr!.on('data', (chunk) => (stderr += chunk))
      child.on('exit', (code, signal) => {
        children.delete(child)
        if (signal !== 'SIGKILL') otherExits.push(`worker ${child.pid} exited (${code ?? signal}): ${stderr}`)
      })
      let buffered = ''
      child.stdout!.on('data', (chunk) => {
        buffered += chunk
        for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
          const event = JSON.parse(buffered.slice(0, end)) as Said
          buffered = buffered.slice(end + 1)
          said.push(event)
          // Held: the worker dies now, with whatever else it was running.
          if (event.type !== 'ready' && !killed.has(event.pid)) {
            killed.add(event.pid)
            child.kill('SIGKILL')
            start()
          }
        }
      })
    }
    for (let i = 0; i < WORKERS; i++) start()
    await eventually(() => said.filter((event) => event.type === 'ready').length >= WORKERS, 30_000, 'the workers to start')
    await queue.addBulk(Array.from({ length: JOBS }, (_, n) => ({ name: 'intake', data: { n } })))

    await eventually(async () => (await queue.getJobCounts('completed')).completed === JOBS, 240_000, `all ${JOBS} jobs to complete`)
    for (const child of children) child.kill('SIGKILL')

    expect(otherExits).toEqual([]) // no worker ended but by a kill
    expect(await queue.getJobCounts('failed', 'active', 'wait', 'delayed')).toEqual({ failed: 0, active: 0, wait: 0, delayed: 0 })
    const { rows } = await pool.query(`SELECT n, count(*)::int AS times, min(pid) AS pid FROM "${schema}".effects GROUP BY n ORDER BY n`)
    expect(rows.filter((row) => row.times !== 1)).toEqual([])
    expect(rows.map((row) => row.n)).toEqual(Array.from({ length: JOBS }, (_, n) => n))

    const held = (type: Said['type']) => said.filter((event) => event.type === type)
    // Most held jobs were held (one in flight on a worker killed for another never got there).
    expect(held('mid').length).toBeGreaterThanOrEqual(HOLD_MID.length / 2)
    expect(held('committed').length).toBeGreaterThanOrEqual(HOLD_COMMITTED.length / 2)
    expect(killed.size).toBeGreaterThanOrEqual(HOLD_MID.length)
    const jobs = new Map((await queue.getJobs(['completed'], 0, -1)).map((job) => [job.data.n as number, job]))
    for (const { n, pid } of held('mid')) {
      // Rolled back with the killed worker's connection; another worker's run is the one that counts.
      expect(rows[n!].pid, `job ${n}`).not.toBe(pid)
      expect(jobs.get(n!)!.returnvalue, `job ${n}`).toEqual({ n, pid: rows[n!].pid })
    }
    for (const { n, pid } of held('committed')) {
      // Committed by the killed worker; run again after the stall, it completed as a duplicate.
      expect(rows[n!].pid, `job ${n}`).toBe(pid)
      expect(jobs.get(n!)!.returnvalue, `job ${n}`).toBeNull()
      expect(jobs.get(n!)!.attemptsStarted, `job ${n}`).toBeGreaterThanOrEqual(2)
    }
  }, 300_000)
})
