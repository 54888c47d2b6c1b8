// idem/queue/bullmq against a real Redis and Postgres: BullMQ's own retries (attempts,
// backoff) around the inbox, job ids (a producer's jobId added again, BullMQ's counter
// after the queue is obliterated, a content id), a delivery that finds its twin in
// flight or the store down (delayed, no attempt counted), dead letters past the inbox's
// maxAttempts, and the retention check. Workers killed mid-job: bullmq-stalled.test.ts.
import { Queue, Worker, type Job, type WorkerOptions } from 'bullmq'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEventStream } from '../../src/core/events.js'
import { bullmqProcessor } from '../../src/queue/bullmq/index.js'
import { createInbox, listDeadLetters, type InboxOptions } from '../../src/queue/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { freePort } from '../support/free-port.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { BULLMQ_CONNECTION, eventually, reachRedis, unique } from './support.js'

const admin = await reachRedis()
const db = admin ? await testSchema('idem_q_bullmq') : undefined
const connection = BULLMQ_CONNECTION
const queues: Queue[] = []
const workers: Worker[] = []

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.close(true)))
  for (const queue of queues) {
    await queue.obliterate({ force: true })
    await queue.close()
  }
  await db?.drop()
  admin?.disconnect()
})

interface Order {
  orderId: string
  amount?: number
}

describe.skipIf(db === undefined)('BullMQ processor (real Redis and Postgres)', () => {
  const { pool, schema } = db as TestSchema
  const store = postgresStore({ pool, schema })
  const effects = `"${schema}".effects`
  beforeAll(async () => {
    await store.migrate()
    await pool.query(`CREATE TABLE ${effects} (order_id text NOT NULL, job_id text NOT NULL)`)
  })
  const effectsOf = async (orderId: string) => (await pool.query(`SELECT job_id FROM ${effects} WHERE order_id = $1`, [orderId])).rows.map((row) => row.job_id as string)

  /** An inbox reporting its settled statuses (and failed attempts counted) into `statuses`. */
  function inboxOf(options: Partial<InboxOptions<PgClient, Order>> = {}) {
    const events = createEventStream()
    const statuses: Array<[string, number | undefined]> = []
    events.subscribe((event) => {
      if (event.type === 'inbox') statuses.push([event.status, event.attempts])
    })
    return { inbox: createInbox<PgClient, Order>({ store, consumer: unique('orders'), events, ...options }), statuses }
  }

  /** A queue of its own and a worker running `processor`; `settled` gets BullMQ's events for each attempt. */
  function queueWith(processor: (job: Job<Order>, token?: string) => Promise<unknown>, options: Partial<WorkerOptions> = {}) {
    const name = unique('idem_bullmq')
    const queue = new Queue<Order>(name, { connection })
    queues.push(queue)
    const settled: Array<{ id: string | undefined; event: 'completed' | 'failed'; value?: unknown; error?: string }> = []
    const start = () => {
      const worker = new Worker<Order>(name, processor, { connection, ...options })
      worker.on('completed', (job, value) => settled.push({ id: job.id, event: 'completed', value }))
      worker.on('failed', (job, error) => settled.push({ id: job?.id, event: 'failed', error: error.message }))
      workers.push(worker)
      return worker
    }
    return { queue, settled, worker: start(), start }
  }

  /** The handler of every test: one row per order, through the inbox's transaction. */
  const insertOrder = async (tx: PgClient, job: Job<Order>) => {
    await tx.query(`INSERT INTO ${effects} (order_id, job_id) VALUES ($1, $2)`, [job.data.orderId, job.id])
    return { charged: job.data.amount }
  }

  it("a handler that fails twice then succeeds: BullMQ's attempts and backoff retry it, the effect commits once, three attempts counted", async () => {
    const { inbox, statuses } = inboxOf()
    let runs = 0
    const { queue, settled } = queueWith(
      bullmqProcessor({
        inbox,
        handler: async (tx, job: Job<Order>) => {
          const value = await insertOrder(tx, job) // written, then rolled back when the run throws
          if (++runs <= 2) throw new Error(`the ledger went away (run ${runs})`)
          return value
        },
      }),
    )
    const job = await queue.add('charge', { orderId: 'o-retried', amount: 1500 }, { attempts: 5, backoff: { type: 'fixed', delay: 50 } })
    await eventually(() => settled.some((s) => s.event === 'completed'), 15_000, 'the job to complete')
    expect(settled).toEqual([
      { id: job.id, event: 'failed', error: 'the ledger went away (run 1)' },
      { id: job.id, event: 'failed', error: 'the ledger went away (run 2)' },
      { id: job.id, event: 'completed', value: { charged: 1500 } },
    ])
    expect(statuses).toEqual([['failed', 1], ['failed', 2], ['processed', undefined]])
    expect(await effectsOf('o-retried')).toEqual([job.id])
    const done = (await queue.getJob(job.id!))!
    expect([done.attemptsMade, done.attemptsStarted, done.returnvalue]).toEqual([3, 3, { charged: 1500 }])
  })

  it('a job added again under its jobId after BullMQ removed the first completes without running: one effect', async () => {
    const { inbox, statuses } = inboxOf()
    let runs = 0
    const { queue, settled } = queueWith(bullmqProcessor({ inbox, handler: (tx, job: Job<Order>) => (runs++, insertOrder(tx, job)) }))
    await queue.add('charge', { orderId: 'o-1001', amount: 700 }, { jobId: 'order-1001', removeOnComplete: true })
    await eventually(() => settled.length === 1, 10_000, 'the first job')
    // Removed on completion, so BullMQ takes the same jobId again: the producer's retry.
    await eventually(async () => (await queue.getJob('order-1001')) === undefined, 10_000, 'the removal')
    await queue.add('charge', { orderId: 'o-1001', amount: 700 }, { jobId: 'order-1001', removeOnComplete: true })
    await eventually(() => settled.length === 2, 10_000, 'the second job')
    expect(settled).toEqual([
      { id: 'order-1001', event: 'completed', value: { charged: 700 } },
      { id: 'order-1001', event: 'completed', value: undefined },
    ])
    expect(statuses.map(([status]) => status)).toEqual(['processed', 'duplicate'])
    expect(runs).toBe(1)
    expect(await effectsOf('o-1001')).toEqual(['order-1001'])
  })

  it("with the inbox's idOf, two jobs with BullMQ's own ids carrying the same order are one message", async () => {
    const { inbox, statuses } = inboxOf({ idOf: (message) => `order:${message.body.orderId}` })
    const { queue, settled } = queueWith(bullmqProcessor({ inbox, handler: insertOrder }))
    const first = await queue.add('charge', { orderId: 'o-content', amount: 10 })
    await eventually(() => settled.length === 1, 10_000, 'the first job')
    const second = await queue.add('charge', { orderId: 'o-content', amount: 10 })
    await eventually(() => settled.length === 2, 10_000, 'the second job')
    expect(first.id).not.toBe(second.id)
    expect(statuses.map(([status]) => status)).toEqual(['processed', 'duplicate'])
    expect(await effectsOf('o-content')).toEqual([first.id])
  })

  it("BullMQ's own ids count from 1 again after the queue is obliterated: the new job 1 is a new message, not job 1's duplicate", async () => {
    const { inbox, statuses } = inboxOf()
    const { queue, settled, worker, start } = queueWith(bullmqProcessor({ inbox, handler: insertOrder }))
    const before = await queue.add('charge', { orderId: 'o-before' })
    await eventually(() => settled.length === 1, 10_000, 'the job before')
    await worker.close()
    await queue.obliterate({ force: true })
    start()
    const after = await queue.add('charge', { orderId: 'o-after' })
    await eventually(() => settled.length === 2, 10_000, 'the job after')
    expect([before.id, after.id]).toEqual(['1', '1'])
    expect(statuses.map(([status]) => status)).toEqual(['processed', 'processed'])
    expect([await effectsOf('o-before'), await effectsOf('o-after')]).toEqual([['1'], ['1']])
  })

  it('a delivery that finds its twin in flight is delayed, not failed: no attempt counted, and it completes as a duplicate', async () => {
    // Two jobs with one content id, two at once: the second waits for nothing (waitMs 0).
    const { inbox, statuses } = inboxOf({ idOf: (message) => `order:${message.body.orderId}`, waitMs: 0 })
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const ran: string[] = []
    const { queue, settled } = queueWith(
      bullmqProcessor({
        inbox,
        handler: async (tx, job: Job<Order>) => {
          ran.push(job.id!)
          await insertOrder(tx, job)
          await held
        },
      }),
      { concurrency: 2 },
    )
    // attempts 1 (BullMQ's default): a delivery counted as failed would fail for good.
    const jobs = await queue.addBulk([
      { name: 'charge', data: { orderId: 'o-twin' } },
      { name: 'charge', data: { orderId: 'o-twin' } },
    ])
    await eventually(() => statuses.some(([status]) => status === 'in-flight'), 10_000, 'the twin to find it in flight')
    const twin = jobs.find((job) => job.id !== ran[0])!
    await eventually(async () => (await queue.getJob(twin.id!))!.isDelayed(), 10_000, 'the twin to be delayed')
    expect((await queue.getJob(twin.id!))!.attemptsMade).toBe(0)
    release()
    await eventually(() => settled.length === 2, 15_000, 'both jobs')
    expect(settled.map((s) => s.event)).toEqual(['completed', 'completed'])
    expect(ran).toEqual([ran[0]])
    expect(await effectsOf('o-twin')).toEqual([ran[0]])
    const done = (await queue.getJob(twin.id!))!
    // Taken twice, one attempt made (the completion); no failed reason.
    expect([done.attemptsStarted, done.attemptsMade, done.failedReason]).toEqual([2, 1, undefined])
  })

  it('a store that cannot be reached delays the job (storeRetryMs) without counting an attempt', async () => {
    const down = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/test`, connectionTimeoutMillis: 2_000 })
    down.on('error', () => {})
    const inbox = createInbox<PgClient, Order>({ store: postgresStore({ pool: down }), consumer: unique('down') })
    let runs = 0
    const { queue, settled, worker } = queueWith(bullmqProcessor({ inbox, handler: () => runs++, storeRetryMs: 60_000 }))
    const job = await queue.add('charge', { orderId: 'o-down' })
    await eventually(async () => (await queue.getJob(job.id!))!.isDelayed(), 10_000, 'the job to be delayed')
    await worker.close()
    await down.end()
    const delayed = (await queue.getJob(job.id!))!
    expect([delayed.attemptsStarted, delayed.attemptsMade, delayed.failedReason, runs, settled]).toEqual([1, 0, undefined, 0, []])
    expect(delayed.delay).toBe(60_000)
  })

  it("past the inbox's maxAttempts the job is a dead letter in idem's table and fails at once in BullMQ (attempts left unused); a retry by hand is a duplicate", async () => {
    const { inbox, statuses } = inboxOf({ maxAttempts: 3 })
    let runs = 0
    const { queue, settled } = queueWith(
      bullmqProcessor({
        inbox,
        handler: async (tx, job: Job<Order>) => {
          runs++
          await insertOrder(tx, job)
          throw new Error('cannot parse claim form 7')
        },
      }),
    )
    const job = await queue.add('charge', { orderId: 'o-poison' }, { attempts: 10, backoff: { type: 'fixed', delay: 20 } })
    await eventually(async () => (await queue.getJob(job.id!))!.isFailed(), 15_000, 'the job to fail')
    const failed = (await queue.getJob(job.id!))!
    expect(failed.attemptsMade).toBe(3)
    expect(failed.failedReason).toMatch(/^idem inbox "orders_[0-9a-f]+": dead-lettered after 3 attempts: Error: cannot parse claim form 7$/)
    expect(statuses).toEqual([['failed', 1], ['failed', 2], ['dead-lettered', 3]])
    const [letter, ...others] = await listDeadLetters(store, { source: 'inbox', name: inbox.consumer })
    expect(others).toEqual([])
    expect(letter).toMatchObject({ attempts: 3, lastError: 'Error: cannot parse claim form 7', payload: { orderId: 'o-poison' } })
    expect(await effectsOf('o-poison')).toEqual([])

    await failed.retry()
    await eventually(() => settled.at(-1)?.event === 'completed', 10_000, 'the retried job')
    expect(runs).toBe(3)
    expect(statuses.at(-1)).toEqual(['duplicate', undefined])
  })

  it("warns once when a job's attempts × backoff outlast the inbox's retention", async () => {
    const warnings: string[] = []
    const { inbox } = inboxOf({ retentionMs: 60_000, onWarning: (warning) => warnings.push(warning.message) })
    const { queue, settled } = queueWith(bullmqProcessor({ inbox, handler: insertOrder }))
    // 20 s + 40 s = 60 s: within the retention.
    await queue.add('charge', { orderId: 'o-h1' }, { attempts: 3, backoff: { type: 'exponential', delay: 20_000 } })
    await eventually(() => settled.length === 1, 10_000, 'the first job')
    expect(warnings).toEqual([])
    // 20 s + 40 s + 80 s = 140 s.
    await queue.add('charge', { orderId: 'o-h2' }, { attempts: 4, backoff: { type: 'exponential', delay: 20_000 } })
    await queue.add('charge', { orderId: 'o-h3' }, { attempts: 4, backoff: { type: 'exponential', delay: 20_000 } })
    await eventually(() => settled.length === 3, 10_000, 'the other jobs')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain(`retentionMs (60000 ms) is shorter than how long BullMQ (${queue.qualifiedName}: attempts × backoff) may redeliver a message (140000 ms)`)
  })

  it('refuses options it does not know and an inbox or handler of the wrong kind', () => {
    const { inbox } = inboxOf()
    expect(() => bullmqProcessor({ inbox, handler: insertOrder, storeRetryMS: 5 } as never)).toThrow(/"storeRetryMS" is not an option; did you mean "storeRetryMs"\?/)
    expect(() => bullmqProcessor({ inbox: {} as never, handler: insertOrder })).toThrow(/option "inbox" must come from createInbox/)
    expect(() => bullmqProcessor({ inbox, handler: 'insert' as never })).toThrow(/option "handler" must be a function/)
  })
})
