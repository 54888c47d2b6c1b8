import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb'
import type { StoreUninstall } from '../../ports/operator.js'
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

/**
 * `idem uninstall --dynamodb`: the table idem keeps everything in, deleted with all its
 * items (DeleteTable), and waited for until DynamoDB no longer lists it. Nothing when
 * the table does not exist.
 */
export function idemTableUninstall(client: DynamoClient, table: string): StoreUninstall {
  const request = `DeleteTable ${table}`
  const exists = async (): Promise<boolean> => {
    try {
      await client.send(new DescribeTableCommand({ TableName: table }))
      return true
    } catch (error) {
      if ((error as Error).name === 'ResourceNotFoundException') return false
      throw error
    }
  }
  return {
    plan: async () => ((await exists()) ? [request] : []),
    async run() {
      if (!(await exists())) return []
      try {
        await client.send(new DeleteTableCommand({ TableName: table }))
      } catch (error) {
        // Deleted meanwhile (another uninstall): what was asked for holds.
        if ((error as Error).name !== 'ResourceNotFoundException') throw error
      }
      for (let i = 0; await exists(); i++) {
        if (i > 600) throw new Error(`dynamodbOperator: table ${table} was not deleted within a minute`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      return [request]
    },
  }
}
