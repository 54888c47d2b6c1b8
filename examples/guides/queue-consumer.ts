// An idempotent queue consumer on RabbitMQ and Postgres: an order message is applied once
// however often it arrives, and the confirmation email it queues in the outbox is
// published once, after the commit.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test AMQP_URL=amqp://guest:guest@127.0.0.1:5672 node --experimental-strip-types examples/guides/queue-consumer.ts
import { randomBytes } from 'node:crypto'
import amqplib from 'amqplib'
import pg from 'pg'
import { postgresStore, type PgClient } from 'idem/postgres'
import { createDispatcher, createInbox, createOutbox, startConsumer, type ConsumedMessage, type Delivery } from 'idem/queue'
import { rabbitmqDeliverer, rabbitmqSource } from 'idem/queue/rabbitmq'

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
// A schema and queues of their own, so that runs side by side never meet; removed at the end.
const suffix = randomBytes(4).toString('hex')
const schema = `guide_queue_${suffix}`
const ordersQueue = `guide.orders.${suffix}`
const emailsQueue = `guide.emails.${suffix}`

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
await pool.query(`CREATE SCHEMA ${schema}`)
const store = postgresStore({ pool, schema })
await store.migrate() // idem_inbox, idem_outbox, idem_dead_letters, …
// No unique constraint: the inbox alone keeps the order from being applied twice.
await pool.query(`CREATE TABLE ${schema}.orders (order_id text NOT NULL, amount int NOT NULL)`)

const connection = await amqplib.connect(AMQP_URL)
const channel = await connection.createChannel()
await channel.assertQueue(ordersQueue, { durable: true })
await channel.assertQueue(emailsQueue, { durable: true })

/** An order message's body, as the producer publishes it. */
interface Order {
  orderId: string
  amount: number
  email: string
}

const inbox = createInbox<PgClient, Order>({ store, consumer: 'order-worker' })
const outbox = createOutbox({ store })
let handled = 0
async function applyOrder(tx: PgClient, message: ConsumedMessage<Order>): Promise<void> {
  handled++
  const { orderId, amount, email } = message.body
  await tx.query(`INSERT INTO ${schema}.orders (order_id, amount) VALUES ($1, $2)`, [orderId, amount])
  // Queued in the same transaction: the email exists exactly when the order does.
  await outbox.add(tx, { topic: emailsQueue, payload: { to: email, orderId }, dedupeKey: `order-confirmation:${orderId}` })
}

/** A worker process's consumer; `dieBeforeAck` makes it commit and then vanish without acking. */
async function startWorker(name: string, { dieBeforeAck = false, expect }: { dieBeforeAck?: boolean; expect: number }) {
  const workerConnection = await amqplib.connect(AMQP_URL)
  const source = rabbitmqSource({ channel: await workerConnection.createChannel(), queue: ordersQueue, prefetch: 1 })
  const subscribe = (onDelivery: (delivery: Delivery) => Promise<void>) =>
    source.subscribe((delivery) => onDelivery(dieBeforeAck ? { ...delivery, ack: () => workerConnection.close() } : delivery))
  let done = () => {}
  const settled = new Promise<void>((resolve) => (done = resolve))
  let seen = 0
  const consumer = await startConsumer({
    inbox,
    source: { ...source, subscribe },
    handler: applyOrder,
    onSettled: (result, delivery) => {
      console.log(`${name}: ${result.status} ${delivery.id}${dieBeforeAck ? ', then died before its ack' : ''}`)
      if (++seen === expect) done()
    },
  })
  await settled
  return { consumer, connection: workerConnection }
}

try {
  // The producer retried a publish whose confirm it never saw: the same message, twice.
  const order: Order = { orderId: 'order-1001', amount: 1500, email: 'ada@example.com' }
  for (let copy = 0; copy < 2; copy++) {
    channel.sendToQueue(ordersQueue, Buffer.from(JSON.stringify(order)), { messageId: order.orderId, persistent: true })
  }
  await startWorker('worker 1', { dieBeforeAck: true, expect: 1 })
  // RabbitMQ redelivers what worker 1 held; worker 2 also gets the producer's second copy.
  const worker2 = await startWorker('worker 2', { expect: 2 })
  await worker2.consumer.stop()
  await worker2.connection.close()

  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.orders`)
  console.log(`the handler ran ${handled} time; orders in the table: ${rows[0].n}`)

  // The dispatcher publishes what the outbox holds, with the dedupe key as the messageId.
  const dispatcher = createDispatcher({ store, deliver: rabbitmqDeliverer({ channel: await connection.createConfirmChannel() }) })
  await dispatcher.drain()
  await dispatcher.drain() // a second round finds nothing left to send
  await dispatcher.stop()
  const { messageCount } = await channel.checkQueue(emailsQueue)
  const email = await channel.get(emailsQueue, { noAck: true })
  if (email === false) throw new Error('the dispatcher published no email')
  console.log(`emails published: ${messageCount} (messageId ${email.properties.messageId})`)
} finally {
  await channel.deleteQueue(ordersQueue)
  await channel.deleteQueue(emailsQueue)
  await connection.close()
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
