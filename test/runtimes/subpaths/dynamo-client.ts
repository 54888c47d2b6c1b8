// The AWS SDK's DynamoDB client, as the runtime loads it, for the DynamoDB Local the Node test names.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { ScriptConfig } from './results.js'
import { required } from './script.js'

/** A client for the run's DynamoDB Local, with the tests' credentials (DynamoDB Local keeps a database per key and region). */
export function localDynamo(config: ScriptConfig): DynamoDBClient {
  return new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'idem', secretAccessKey: 'idem' },
    endpoint: required(config, 'dynamodbUrl'),
  })
}

/** An `UpdateItem` that adds one to `n` of `key`. */
export const addOne = (table: string, key: Record<string, { S: string }>) => ({
  TableName: table,
  Key: key,
  UpdateExpression: 'ADD n :one',
  ExpressionAttributeValues: { ':one': { N: '1' } },
})
