// idem/lambda on DynamoDB Local, the leased engine (what Powertools users run): the
// function holds a lease the invocation's deadline bounds, its effects are steps that a
// retry resumes after, and the SQS inbox's ids commit with each record's staged writes in
// one TransactWriteItems. The scenarios are in scenarios.ts.
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import { randomUUID } from 'node:crypto'
import { afterAll, describe } from 'vitest'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import type { StepContext } from '../../src/core/leased/steps.js'
import { createInbox } from '../../src/queue/index.js'
import type { DynamoTx } from '../../src/stores/dynamodb/index.js'
import { testDynamo, type TestDynamo } from '../support/dynamodb.js'
import { lambdaScenarios, type LambdaBackend } from './scenarios.js'

const dynamo = await testDynamo('lambda')

describe.skipIf(dynamo === undefined)('idem/lambda on DynamoDB Local (leased)', () => {
  const { store, client, table } = dynamo as TestDynamo
  afterAll(() => dynamo?.drop())

  const counter = (id: string) => ({ pk: { S: `shipment#${id}` }, sk: { S: '#' } })
  const add = { UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': { N: '1' } } }

  let backend: LambdaBackend<StepContext, DynamoTx> | undefined
  lambdaScenarios('DynamoDB', () => {
    backend ??= {
      // A 2 s lease: a key its holder did not let go stays held that long, past every retry below that waits 0.
      idem: createLeasedIdem({ store, leaseMs: 2_000 }),
      retryWaitMs: 0,
      async effect(ctx, id) {
        // Outside any transaction: a step, so a retry after a timeout does not ship twice.
        await ctx.step('ship', async () => {
          await client.send(new UpdateItemCommand({ TableName: table, Key: counter(id), ...add }))
        })
      },
      async count(id) {
        return Number((await client.send(new GetItemCommand({ TableName: table, Key: counter(id), ConsistentRead: true }))).Item?.n?.N ?? 0)
      },
      inbox: (maxAttempts) => createInbox({ store, consumer: `orders-${randomUUID()}`, ...(maxAttempts === undefined ? {} : { maxAttempts }) }),
      recordEffect(tx, id) {
        tx.write({ Update: { TableName: table, Key: counter(id), ...add } })
      },
    }
    return backend
  })
})
