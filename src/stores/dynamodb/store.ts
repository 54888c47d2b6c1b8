import { CreateTableCommand, DescribeTableCommand, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { KeyPeek } from '../../core/dual-read.js'
import type { LeasedStore } from '../../core/leased/store.js'
import { assertDuration, assertKnownOptions, optionNames } from '../../core/validate.js'
import type { WithOnceTable } from '../../ports/once-table.js'
import type { WithDeadLetterTable } from '../../ports/dead-letter-table.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'
import { dynamoDeadLetterTable } from './dead-letter-table.js'
import { dynamoInboxTable } from './inbox-table.js'
import { dynamoLeasedStore } from './leased/index.js'
import { dynamoOnceTable } from './once-table.js'
import { wireFor, type DynamoClient } from './wire.js'
import { WriteSet, type DynamoTx } from './write-set.js'

/** How long one store call may take before `StoreUnavailableError`, by default. */
export const DEFAULT_DYNAMODB_TIMEOUT_MS = 1_000
/** How long an inbox delivery's or a `once` mark's claim holds without renewal, by default. */
export const DEFAULT_DYNAMODB_HOLD_MS = 30_000

/** What `dynamodbStore` takes: the DynamoDB client, the table, the per-call timeout and the inbox and `once` hold. */
export interface DynamoStoreOptions {
  /** An AWS SDK v3 `DynamoDBClient` (`@aws-sdk/client-dynamodb`). The store never closes it. */
  client: DynamoClient
  /** The table idem keeps everything in (create it with `createTable()`): 3–255 of `A-Z a-z 0-9 _ . -`. */
  table: string
  /**
   * How long one call may wait for DynamoDB before it fails with
   * `StoreUnavailableError`, whatever the client's own retry settings. @default 1000
   */
  timeoutMs?: number
  /**
   * How long an inbox delivery's claim on its message id (and a `once` mark's) holds
   * without renewal. An open transaction renews it every third of this; a consumer that
   * crashed mid-message keeps the id from other deliveries this long. @default 30000
   */
  holdMs?: number
}

/** The leased-engine store on DynamoDB, in one table, with the inbox, `once` and dead-letter ports; `createTable()` makes the table. */
export interface DynamoStore extends LeasedStore, KeyPeek, WithInboxTable<DynamoTx>, WithOnceTable<DynamoTx>, WithDeadLetterTable {
  readonly table: string
  /**
   * Creates the table if it does not exist (on-demand capacity, `pk`/`sk` strings) and
   * turns on its TTL attribute (`ttl`), then waits until it is active.
   * @returns whether it created the table
   */
  createTable(): Promise<{ created: boolean }>
  /**
   * Runs `work` with a write set and commits it (one `TransactWriteItems`, with any
   * `once` marks made in it), or, when `work` throws, writes nothing and rethrows.
   */
  transaction<T>(work: (tx: DynamoTx) => T | Promise<T>): Promise<T>
}

const OPTIONS = optionNames<DynamoStoreOptions>({ client: true, table: true, timeoutMs: true, holdMs: true })

/**
 * The DynamoDB store, on the AWS SDK v3 client: a leased store (`createLeasedIdem`),
 * the inbox's id table (`createInbox`, with handlers that stage DynamoDB writes),
 * `once` and dead letters, all in one table. A fresh leased call costs two conditional
 * writes (claim, complete), a replay one; see docs/dynamodb.md for the layout and the
 * capacity each operation consumes.
 *
 * Time is the caller's clock: DynamoDB's expressions have none of their own.
 *
 * @example
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
 * import { dynamodbStore } from 'idem/dynamodb'
 * const store = dynamodbStore({ client: new DynamoDBClient({}), table: 'idem' })
 * await store.createTable()
 * const idem = createLeasedIdem({ store })
 */
export function dynamodbStore(options: DynamoStoreOptions): DynamoStore {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('dynamodbStore: pass { client, table }')
  assertKnownOptions('dynamodbStore', options, OPTIONS)
  const { client, table, timeoutMs = DEFAULT_DYNAMODB_TIMEOUT_MS, holdMs = DEFAULT_DYNAMODB_HOLD_MS } = options
  if (client === null || typeof client !== 'object' || typeof client.send !== 'function') {
    throw new InvalidOptionError('dynamodbStore: option "client" must be a DynamoDBClient from @aws-sdk/client-dynamodb')
  }
  if (typeof table !== 'string' || !/^[A-Za-z0-9_.-]{3,255}$/.test(table)) {
    throw new InvalidOptionError(`dynamodbStore: option "table" must be a DynamoDB table name (3–255 of A-Z a-z 0-9 _ . -), got ${JSON.stringify(table)}`)
  }
  assertDuration('dynamodbStore: option "timeoutMs"', timeoutMs, 1)
  assertDuration('dynamodbStore: option "holdMs"', holdMs, 3)
  const wire = wireFor(client, table, timeoutMs)
  const leased = dynamoLeasedStore(wire)

  return {
    name: 'dynamodb',
    maxOutcomeBytes: leased.maxOutcomeBytes,
    table,
    claim: leased.claim,
    renew: leased.renew,
    saveStep: leased.saveStep,
    complete: leased.complete,
    release: leased.release,
    peek: leased.peek,
    inbox: dynamoInboxTable(wire, holdMs),
    once: dynamoOnceTable(wire, holdMs),
    deadLetters: dynamoDeadLetterTable(wire),
    async transaction(work) {
      const tx = new WriteSet(wire, holdMs)
      let value
      try {
        value = await work(tx)
      } catch (error) {
        await tx.rollback()
        throw error
      }
      await tx.commit()
      return value
    },
    async createTable() {
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
    },
  }
}
