// A Lambda function made idempotent on DynamoDB, as Powertools users run it: an
// EventBridge rule's target that books a courier once per order event, however often
// the event arrives. Invoked here the way Lambda invokes it (an event and a context whose
// remaining time counts down), against DynamoDB Local.
// DYNAMODB_URL=http://127.0.0.1:8000 node --experimental-strip-types examples/guides/lambda-dynamodb.ts
import { randomUUID } from 'node:crypto'
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { Context, EventBridgeEvent } from 'aws-lambda'
import { createLeasedIdem, type StepContext } from 'idem'
import { dynamodbStore } from 'idem/dynamodb'
import { makeIdempotent } from 'idem/lambda'

const client = new DynamoDBClient({
  endpoint: process.env.DYNAMODB_URL ?? 'http://127.0.0.1:8000',
  region: 'us-east-1',
  credentials: { accessKeyId: 'idem', secretAccessKey: 'idem' },
})
const table = `guide_lambda_${randomUUID().slice(0, 8)}` // a table of its own, deleted at the end
const store = dynamodbStore({ client, table })
await store.createTable() // pk/sk strings, TTL on `ttl`: what you would deploy once

type OrderPlaced = EventBridgeEvent<'Order Placed', { orderId: string; parcels: number }>
interface Booking {
  bookingId: string
  orderId: string
}

// The courier: an external API. It dedupes on the key we send (derived from the event).
const bookings = new Map<string, Booking>()
const courier = {
  async book(order: { orderId: string }, { idempotencyKey }: { idempotencyKey: string }): Promise<Booking> {
    const booking = bookings.get(idempotencyKey) ?? { bookingId: `bk_${bookings.size + 1}`, orderId: order.orderId }
    bookings.set(idempotencyKey, booking)
    return booking
  },
}

let stall = false
/** The label printer: hangs for 10 s when `stall` is set, unless the signal gives up first. */
function printLabel(booking: Booking, { signal }: { signal: AbortSignal }): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, stall ? 10_000 : 0)
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()))
  })
}

export const handler = makeIdempotent(
  async (event: OrderPlaced, context, ctx: StepContext) => {
    // A step runs once per event: after a timeout, the retry resumes after it.
    const booking = await ctx.step('book', () => courier.book(event.detail, { idempotencyKey: ctx.derive('book') }))
    await printLabel(booking, { signal: ctx.signal }) // idem's signal aborts at the invocation's deadline
    return { bookingId: booking.bookingId }
  },
  {
    idem: createLeasedIdem({ store, leaseMs: 1_000 }), // a lease lost with its sandbox frees the key within 1 s
    input: (event) => event.detail, // Powertools' payloadValidationJmesPath: 'detail'
  },
)

/** The context Lambda hands an invocation configured with `timeoutMs`. */
function invocation(timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'book-courier',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:book-courier',
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/book-courier',
    logStreamName: '2026/12/07/[$LATEST]0',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  }
}

const event: OrderPlaced = {
  version: '0',
  id: '6a7e8feb-b491-4cf7-a9f1-bf3703467718',
  'detail-type': 'Order Placed',
  source: 'com.example.orders',
  account: '123456789012',
  time: '2026-12-02T01:00:00Z',
  region: 'us-east-1',
  resources: [],
  detail: { orderId: 'o-1001', parcels: 2 },
}

try {
  console.log('first delivery:', await handler(event, invocation(3_000)))
  console.log('EventBridge retries it:', await handler(event, invocation(3_000)))
  await handler({ ...event, detail: { ...event.detail, parcels: 3 } }, invocation(3_000)).catch((error) => console.log('same id, other detail:', error.name))

  // Another order; this time the function hangs until the invocation's time is nearly out.
  const late: OrderPlaced = { ...event, id: 'a1b2c3d4-0000-4000-8000-000000000002', detail: { orderId: 'o-1002', parcels: 1 } }
  stall = true
  await handler(late, invocation(2_000)).catch((error) => console.log('timed out:', error.name, `(${error.code})`))
  stall = false
  console.log('the retry:', await handler(late, invocation(3_000)))
  console.log('courier bookings:', [...bookings.values()].map((booking) => booking.orderId).join(', '))
} finally {
  await client.send(new DeleteTableCommand({ TableName: table }))
  client.destroy()
}
