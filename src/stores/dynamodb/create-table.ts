import { CreateTableCommand, DescribeTableCommand, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb'
import type { DynamoClient } from './wire.js'

/**
 * Creates idem's table if it does not exist (on-demand capacity, `pk`/`sk` strings),
 * waits until it is active and turns on its TTL attribute (`ttl`): `store.createTable()`.
 */
export async function createIdemTable(client: DynamoClient, table: string): Promise<{ created: boolean }> {
  let created = false
  try {
    await client.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
      }),
    )
    created = true
  } catch (error) {
    if ((error as Error).name !== 'ResourceInUseException') throw error
  }
  for (let i = 0; ; i++) {
    const { Table } = (await client.send(new DescribeTableCommand({ TableName: table }))) as { Table?: { TableStatus?: string } }
    if (Table?.TableStatus === 'ACTIVE') break
    if (i > 600) throw new Error(`dynamodbStore: table ${table} did not become active`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  try {
    await client.send(new UpdateTimeToLiveCommand({ TableName: table, TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true } }))
  } catch (error) {
    // Already on: DynamoDB refuses to turn it on twice.
    if (!/already enabled/i.test((error as Error).message)) throw error
  }
  return { created }
}
