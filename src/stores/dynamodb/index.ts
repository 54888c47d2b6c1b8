export { dynamodbStore, DEFAULT_DYNAMODB_HOLD_MS, DEFAULT_DYNAMODB_MARK_WAIT_MS, DEFAULT_DYNAMODB_TIMEOUT_MS, type DynamoStore, type DynamoStoreOptions } from './store.js'
export type { DynamoTx } from './write-set.js'
export { dynamodbOperator, type DynamoOperatorOptions } from './operator.js'
export type { DynamoClient } from './wire.js'
