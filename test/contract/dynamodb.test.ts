import { GetItemCommand } from '@aws-sdk/client-dynamodb'
import { afterAll, describe } from 'vitest'
import { dynamodbStore, type DynamoTx } from '../../src/stores/dynamodb/index.js'
import { inboxTableContract, leasedStoreContract, onceTableContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'
import { localClient, testDynamo, type TestDynamo } from '../support/dynamodb.js'

const dynamo = await testDynamo('contract')

describe.skipIf(dynamo === undefined)('dynamodb store contracts (DynamoDB Local)', () => {
  const { store, client, table } = dynamo as TestDynamo
  const down = localClient('http://127.0.0.1:1', 1)
  afterAll(async () => {
    down.destroy()
    await dynamo?.drop()
  })
  // Nothing listens on port 1: every request is refused.
  const unavailableStore = () => dynamodbStore({ client: down, table, timeoutMs: 1_000 })

  // The handler's effects: a counter per id in the same table (any table would do), staged in the write set.
  const effects = {
    writeEffect: (tx: DynamoTx, id: string) => {
      tx.write({
        Update: {
          TableName: table,
          Key: { pk: { S: `effect#${id}` }, sk: { S: '#' } },
          UpdateExpression: 'ADD #n :one',
          ExpressionAttributeNames: { '#n': 'n' },
          ExpressionAttributeValues: { ':one': { N: '1' } },
        },
      })
    },
    countEffects: async (id: string) => {
      const { Item } = await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: `effect#${id}` }, sk: { S: '#' } }, ConsistentRead: true }))
      return Number(Item?.n?.N ?? 0)
    },
  }

  describe('leased (LeasedStore)', () => itFulfils(leasedStoreContract(() => ({ store, unavailableStore }))))
  describe('inbox (InboxTable, a write set committed with the id)', () =>
    itFulfils(inboxTableContract(() => ({ store, ...effects, unavailableStore }))))
  describe('once (OnceTable)', () =>
    itFulfils(onceTableContract(() => ({ store, inTransaction: (work) => store.transaction(async (tx) => void (await work(tx))), concurrentTransactions: true }))))
})
