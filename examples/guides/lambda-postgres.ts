// Lambda functions on Postgres (RDS or Aurora, through RDS Proxy): the effect and the key
// commit in one transaction. An EventBridge target ships an order; an SQS consumer
// applies a batch where one record is poison, reports only that one back to the queue,
// and applies nothing twice when the batch comes again.
// DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --experimental-strip-types examples/guides/lambda-postgres.ts
import { randomBytes, randomUUID } from 'node:crypto'
import type { Context, EventBridgeEvent, SQSEvent, SQSRecord } from 'aws-lambda'
import pg from 'pg'
import { makeIdempotent, makeSqsBatchHandler } from 'idem/lambda'
import { postgresStore, type PgClient } from 'idem/postgres'
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

type OrderPlaced = EventBridgeEvent<'Order Placed', { orderId: string }>
/** A restock message's body, as the producer sends it (a poison one breaks it). */
interface Restock {
  sku: string
  quantity: number
}

export const ship = makeIdempotent(
  async (event: OrderPlaced, context, tx: PgClient) => {
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
  { inbox: createInbox<PgClient, Restock>({ store, consumer: 'restock' }) },
)

/** The context Lambda hands an invocation configured with `timeoutMs`. */
function invocation(timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'orders',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:orders',
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/orders',
    logStreamName: '2026/12/07/[$LATEST]0',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  }
}

const orderPlaced: OrderPlaced = {
  version: '0',
  id: 'b2d6cf5e-3c1f-4b3e-9a8e-1f0c2a7d9e41',
  'detail-type': 'Order Placed',
  source: 'com.example.orders',
  account: '123456789012',
  time: '2026-12-02T01:00:00Z',
  region: 'us-east-1',
  resources: [],
  detail: { orderId: 'o-2001' },
}
const record = (messageId: string, body: object, receiveCount: number): SQSRecord => ({
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
const batch = (receiveCount: number): SQSEvent => ({
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
  const { rows: shipments } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.shipments`)
  const { rows: stock } = await pool.query<Restock>(`SELECT sku, quantity FROM ${schema}.stock ORDER BY sku`)
  console.log('shipments:', shipments[0].n, '| stock rows:', stock.map((row) => `${row.sku} ${row.quantity}`).join(', '))
} finally {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`)
  await pool.end()
}
