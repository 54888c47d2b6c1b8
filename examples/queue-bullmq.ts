// A BullMQ worker whose jobs run once per job id: the order is written in the same
// transaction as the id. Run: node --experimental-strip-types examples/queue-bullmq.ts (Redis at REDIS_URL)
import Database from 'better-sqlite3'
import { Queue, Worker } from 'bullmq'
import { randomUUID } from 'node:crypto'
import { createInbox } from 'idem/queue'
import { bullmqProcessor } from 'idem/queue/bullmq'
import { sqliteStore, type SqliteDatabase } from 'idem/sqlite'

/** An order job's data, as the producer adds it. */
interface Order {
  orderId: string
  amount: number
}

const db = new Database(':memory:')
db.exec('CREATE TABLE orders (order_id TEXT, amount INTEGER)')
const store = sqliteStore({ db })
store.migrate() // idem's tables, beside the app's

const redis = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
const connection = { host: redis.hostname, port: Number(redis.port || 6379) }
const queue = new Queue(`orders-${randomUUID()}`, { connection })

let ledgerUp = false // the first run fails, and BullMQ retries it after its backoff
const worker = new Worker(
  queue.name,
  bullmqProcessor({
    inbox: createInbox<SqliteDatabase, Order>({ store, consumer: 'orders', maxAttempts: 3 }),
    handler: (tx, job) => {
      tx.prepare('INSERT INTO orders (order_id, amount) VALUES (?, ?)').run(job.data.orderId, job.data.amount)
      if (!ledgerUp) {
        ledgerUp = true
        throw new Error('the ledger went away') // rolls the insert back
      }
      return { charged: job.data.amount }
    },
  }),
  { connection },
)
worker.on('failed', (job, error) => console.log(`${job?.id} attempt ${job?.attemptsMade}: failed (${error.message})`))
const completed = () => new Promise((done) => worker.once('completed', done))
worker.on('completed', (job, value) => {
  const returned = value === undefined ? 'nothing: a duplicate, the handler did not run' : JSON.stringify(value)
  console.log(`${job.id} attempt ${job.attemptsMade}: completed, returned ${returned}`)
})

const order: Order = { orderId: 'order-1001', amount: 1500 }
const options = { jobId: order.orderId, attempts: 3, backoff: { type: 'fixed', delay: 100 }, removeOnComplete: true }
await queue.add('charge', order, options)
await completed()
// The producer sends the order again (its first add timed out, say): BullMQ removed the
// completed job, so this is a new job with the same id.
await queue.add('charge', order, options)
await completed()
console.log('orders in the table:', db.prepare('SELECT count(*) FROM orders').pluck().get())

await worker.close()
await queue.obliterate({ force: true })
await queue.close()
