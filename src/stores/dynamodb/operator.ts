import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertDuration, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { StoreOperator } from '../../ports/operator.js'
import { idemTableUninstall } from './create-table.js'
import { expiredCount, prune } from './operations/expired.js'
import { inspect } from './operations/inspect.js'
import { stats } from './operations/stats.js'
import { wireFor, type DynamoClient } from './wire.js'

/** What `dynamodbOperator` takes: the client, the store's table, and how long one request may take. */
export interface DynamoOperatorOptions {
  /** An AWS SDK v3 `DynamoDBClient` (`@aws-sdk/client-dynamodb`). The operator never closes it. */
  client: DynamoClient
  /** The store's table (`dynamodbStore`'s `table`). */
  table: string
  /** How long one request (a page of a scan, a delete) may wait for DynamoDB before `StoreUnavailableError`. @default 10000 */
  timeoutMs?: number
}

const OPTIONS = optionNames<DynamoOperatorOptions>({ client: true, table: true, timeoutMs: true })

/**
 * The operator of a DynamoDB store's table: one key's claim, lease and steps; counts of
 * leases, inbox ids and dead letters; expired items and their pruning. DynamoDB's TTL
 * deletes expired items itself, but only eventually (typically within days), and the
 * store never reads them; `prune` deletes them now, each with a condition that it is
 * still expired. Counting and pruning scan the whole table: run them off-peak on large
 * ones. What `idem stats|inspect|prune|uninstall --dynamodb` run; `uninstall` deletes the table. Time is this machine's clock,
 * as the store's.
 * @example
 * const operator = dynamodbOperator({ client: new DynamoDBClient({}), table: 'idem' })
 * const { leases } = await operator.stats(86_400_000)
 * await operator.prune({ batchSize: 500 })
 */
export function dynamodbOperator(options: DynamoOperatorOptions): StoreOperator & Required<Pick<StoreOperator, 'stats' | 'expiredCount' | 'prune' | 'uninstall'>> {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('dynamodbOperator: pass { client, table }')
  assertKnownOptions('dynamodbOperator', options, OPTIONS)
  const { client, table, timeoutMs = 10_000 } = options
  if (client === null || typeof client !== 'object' || typeof client.send !== 'function') {
    throw new InvalidOptionError('dynamodbOperator: option "client" must be a DynamoDBClient from @aws-sdk/client-dynamodb')
  }
  if (typeof table !== 'string' || !/^[A-Za-z0-9_.-]{3,255}$/.test(table)) {
    throw new InvalidOptionError(`dynamodbOperator: option "table" must be a DynamoDB table name (3–255 of A-Z a-z 0-9 _ . -), got ${JSON.stringify(table)}`)
  }
  assertDuration('dynamodbOperator: option "timeoutMs"', timeoutMs, 1)
  const wire = wireFor(client, table, timeoutMs)
  // The operations, one file each in operations/: inspect, stats, expired (expiredCount, prune).
  return {
    backend: 'DynamoDB',
    inspect: (scope, key) => inspect(wire, scope, key),
    stats: (windowMs) => stats(wire, windowMs),
    expiredCount: () => expiredCount(wire),
    prune: (pruning) => prune(wire, pruning),
    uninstall: idemTableUninstall(client, table),
  }
}
