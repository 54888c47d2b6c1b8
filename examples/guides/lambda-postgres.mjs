// Lambda functions on Postgres (RDS or Aurora, through RDS Proxy): the effect and the key
// commit in one transaction. An EventBridge target ships an order; an SQS consumer
// applies a batch where one record is poison, reports only that one back to the queue,
// and applies nothing twice when the batch comes again.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node examples/guides/lambda-postgres.mjs
import { randomBytes, randomUUID } from 'node:crypto'
import pg from 'pg'
import { makeIdempotent, makeSqsBatchHandler } from 'idem/lambda'
import { postgresStore } from 'idem/postgres'
import { createInbox } from 'idem/queue'

// One connection per sandbox: a Lambda sandbox runs one invocation at a time.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(error))
const schema = `guide_lambda_${randomBytes(4).toString('hex')}` // a schema of its own, dropped at the end
await pool.query(`CREATE SCHEMA ${schema}`)
const store = postgresStore({ pool, schema })
await store.migrate() // run once at deploy time, not per invocation
// No unique constraints: idem alone keeps a shipment from being written twice.
await pool.query(`CREATE TABLE ${schema}.shipments (order_id text NOT NULL)`)
await pool.query(`CREATE TABLE ${schema}.stock (sku text NOT NULL, quantity int NOT NULL)`)

export const ship = makeIdempotent(
  async (event, context, tx) => {
    // Through tx: the shipment commits with the event's key, or neither does.
    await tx.query(`INSERT INTO ${schema}.shipments (order_id) VALUES ($1)`, [event.detail.orderId])
    return { shipped: event.detail.orderId }
  },
  { store },
)

export const restock = makeSqsBatchHandler(
  async (tx, message) => {
    if (!Number.isInteger(message.body.quantity)) throw new Error(`bad quantity in ${message.id}`)
    await tx.query(`INSERT INTO ${schema}.stock (sku, quantity) VALUES ($1, $2)`, [message.body.sku, message.body.quantity])
  },
  { inbox: createInbox({ store, consumer: 'restock' }) },
)

function invocation(timeoutMs) {
  const deadline = Date.now() + timeoutMs
  return { functionName: 'orders', awsRequestId: randomUUID(), getRemainingTimeInMillis: () => deadline - Date.now() }
}

const orderPlaced = { version: '0', id: 'b2d6cf5e-3c1f-4b3e-9a8e-1f0c2a7d9e41', 'detail-type': 'Order Placed', source: 'com.example.orders', detail: { orderId: 'o-2001' } }
const record = (messageId, body, receiveCount) => ({
  messageId,
  receiptHandle: randomUUID(),
  body: JSON.stringify(body),
  attributes: { ApproximateReceiveCount: String(receiveCount), SentTimestamp: '1764637200000', SenderId: 'AIDAEXAMPLE', ApproximateFirstReceiveTimestamp: '1764637200100' },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:restock',
  awsRegion: 'us-east-1',
})
const batch = (receiveCount) => ({
  Records: [
    record('m-1', { sku: 'tea', quantity: 5 }, receiveCount),
    record('m-2', { sku: 'cups', quantity: 'many' }, receiveCount),
    record('m-3', { sku: 'pots', quantity: 2 }, receiveCount),
  ],
})

try {
  console.log(await ship(orderPlaced, invocation(3_000)))
  console.log(await ship(orderPlaced, invocation(3_000)))
  console.log('restock:', JSON.stringify(await restock(batch(1), invocation(3_000))))
  console.log('restock again:', JSON.stringify(await restock(batch(2), invocation(3_000))))
  const { rows: shipments } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.shipments`)
  const { rows: stock } = await pool.query(`SELECT sku, quantity FROM ${schema}.stock ORDER BY sku`)
  console.log('shipments:', shipments[0].n, '| stock rows:', stock.map((row) => `${row.sku} ${row.quantity}`).join(', '))
} finally {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
