// bench:lambda: the same Lambda function made idempotent by idem (`makeIdempotent` from
// idem/lambda, the leased engine on the DynamoDB store) and by Powertools for AWS Lambda
// (`@aws-lambda-powertools/idempotency` 2.35, its DynamoDB persistence layer), both on one
// DynamoDB Local, in one run, interleaved. The function is invoked in-process the way the
// Lambda runtime calls a handler (an EventBridge event, a context whose remaining time
// counts down), CONCURRENCY invocations at a time, as concurrent sandboxes of one function
// would. Both key by the event's `id` and validate the payload on its `detail` (idem's
// `input`, Powertools' `payloadValidationJmesPath`), and neither keeps a local cache.
// - fresh: a new event id per invocation (two DynamoDB writes each: claim, complete);
// - replay: events already completed, invoked again (one conditional write that fails
//   and returns the record).
// Prints invocations per second, the bench process's CPU per invocation (the client: the
// wrapper, the SDK, JSON; it is what a Lambda sandbox pays, and it carries over, where
// DynamoDB Local's throughput does not), DynamoDB Local's CPU per invocation, and
// `RATIO lambda.*` lines, idem over Powertools (above 1: idem faster, or cheaper for CPU).
// Build first (`npm run build`): this runs over dist/.
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { cpuLedger, interleaved, ratio, throughput } from './support.mjs'

const DYNAMODB_URL = process.env.IDEM_BENCH_DYNAMODB_URL ?? 'http://127.0.0.1:8000'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
/** Completed events each replay round cycles through. */
const REPLAY_KEYS = 500

if (!existsSync(new URL('../dist/lambda/index.js', import.meta.url))) {
  console.error('bench:lambda runs over dist/: run `npm run build` first')
  process.exit(1)
}
// Powertools prefixes its keys with the function's name, read from Lambda's environment.
process.env.AWS_LAMBDA_FUNCTION_NAME ??= 'ship-orders'
const { makeIdempotent } = await import('../dist/lambda/index.js')
const { dynamodbStore } = await import('../dist/stores/dynamodb/index.js')
const powertools = await import('@aws-lambda-powertools/idempotency')
const { DynamoDBPersistenceLayer } = await import('@aws-lambda-powertools/idempotency/dynamodb')

const client = new DynamoDBClient({ region: 'us-east-1', endpoint: DYNAMODB_URL, credentials: { accessKeyId: 'idem', secretAccessKey: 'idem' }, maxAttempts: 3 })
try {
  await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(2_000) })
} catch (error) {
  console.log(`bench:lambda: skipped, no DynamoDB Local at ${DYNAMODB_URL} (${error.message}); start one or set IDEM_BENCH_DYNAMODB_URL`)
  process.exit(0)
}

const suffix = randomUUID().slice(0, 8)
const idemTable = `idem_bench_lambda_${suffix}`
const powertoolsTable = `powertools_bench_lambda_${suffix}`

/** The function both wrap: what a shipping function returns, with no work of its own, so the wrappers' cost shows whole. */
const ship = async (event) => ({ orderId: event.detail.orderId, carrier: 'ups', amount: event.detail.amount })

function orderPlaced() {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Order Placed',
    source: 'com.example.orders',
    account: '123456789012',
    time: '2026-12-02T01:00:00Z',
    region: 'us-east-1',
    resources: [],
    detail: { orderId: randomUUID(), amount: 4200 },
  }
}

function lambdaContext() {
  const deadline = Date.now() + 60_000
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${process.env.AWS_LAMBDA_FUNCTION_NAME}`,
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${process.env.AWS_LAMBDA_FUNCTION_NAME}`,
    logStreamName: '2026/12/02/[$LATEST]bench',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done() {},
    fail() {},
    succeed() {},
  }
}

const store = dynamodbStore({ client, table: idemTable, timeoutMs: 5_000 })
await store.createTable()
await client.send(
  new CreateTableCommand({
    TableName: powertoolsTable,
    AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  }),
)

try {
  const handlers = {
    idem: makeIdempotent(ship, { store, input: (event) => event.detail }),
    powertools: powertools.makeIdempotent(ship, {
      persistenceStore: new DynamoDBPersistenceLayer({ tableName: powertoolsTable, awsSdkV3Client: client }),
      config: new powertools.IdempotencyConfig({ eventKeyJmesPath: 'id', payloadValidationJmesPath: 'detail' }),
    }),
  }

  // Both answer alike: one run, then the stored result.
  for (const [name, handler] of Object.entries(handlers)) {
    let runs = 0
    const counted = name === 'idem' ? makeIdempotent(async (e) => (runs++, ship(e)), { store, input: (e) => e.detail }) : undefined
    const event = orderPlaced()
    const first = await handler(event, lambdaContext())
    const again = await handler(event, lambdaContext())
    if (JSON.stringify(first) !== JSON.stringify(again)) throw new Error(`${name}: the replay differs from the first answer`)
    if (counted !== undefined) {
      const other = orderPlaced()
      await counted(other, lambdaContext())
      await counted(other, lambdaContext())
      if (runs !== 1) throw new Error('idem ran a function twice')
    }
  }

  const replayEvents = {}
  for (const [name, handler] of Object.entries(handlers)) {
    replayEvents[name] = Array.from({ length: REPLAY_KEYS }, orderPlaced)
    for (const event of replayEvents[name]) await handler(event, lambdaContext())
  }

  const ledger = cpuLedger({ [process.pid]: 'client' })
  const variants = {}
  for (const [name, handler] of Object.entries(handlers)) {
    variants[`${name} fresh`] = () => throughput(() => handler(orderPlaced(), lambdaContext()), { concurrency: CONCURRENCY, ms: SECONDS * 1000 })
    const events = replayEvents[name]
    variants[`${name} replay`] = () => throughput((i) => handler(events[i % events.length], lambdaContext()), { concurrency: CONCURRENCY, ms: SECONDS * 1000 })
  }
  console.log(`bench:lambda: ${CONCURRENCY} concurrent invocations, ${ROUNDS} × ${SECONDS} s per variant, interleaved, on DynamoDB Local at ${DYNAMODB_URL}`)
  const perSecond = await interleaved(variants, ROUNDS, (variant, name) => ledger.record(name, variant))
  for (const [name, value] of Object.entries(perSecond)) {
    const own = ledger.micros(name, 'client')
    const local = ledger.micros(name, 'dynamodb-local')
    console.log(`  ${name.padEnd(18)} ${value.toFixed(0).padStart(6)} invocations/s   client CPU ${own?.toFixed(0) ?? '?'} µs   DynamoDB Local CPU ${local?.toFixed(0) ?? '?'} µs per invocation`)
  }
  ledger.print('invocation')
  const cpu = (name) => ledger.micros(name, 'client')
  ratio('lambda.fresh_idem_vs_powertools', perSecond['idem fresh'] / perSecond['powertools fresh'])
  ratio('lambda.replay_idem_vs_powertools', perSecond['idem replay'] / perSecond['powertools replay'])
  if (cpu('idem fresh') !== undefined) {
    ratio('lambda.fresh_client_cpu_powertools_vs_idem', cpu('powertools fresh') / cpu('idem fresh'))
    ratio('lambda.replay_client_cpu_powertools_vs_idem', cpu('powertools replay') / cpu('idem replay'))
    ratio('lambda.fresh_client_cpu_us_idem', cpu('idem fresh'), 0)
    ratio('lambda.fresh_client_cpu_us_powertools', cpu('powertools fresh'), 0)
    ratio('lambda.replay_client_cpu_us_idem', cpu('idem replay'), 0)
    ratio('lambda.replay_client_cpu_us_powertools', cpu('powertools replay'), 0)
  }
} finally {
  await client.send(new DeleteTableCommand({ TableName: idemTable })).catch(() => {})
  await client.send(new DeleteTableCommand({ TableName: powertoolsTable })).catch(() => {})
  client.destroy()
}
