import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { KeyPeek } from '../../ports/key-peek.js'
import type { LeasedStore } from '../../ports/leased-store.js'
import { assertDuration, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { WithOnceTable } from '../../ports/once-table.js'
import type { WithDeadLetterTable } from '../../ports/dead-letter-table.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'
import { createIdemTable } from './create-table.js'
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
/** How long a `once` mark waits for another transaction holding the same pair, by default (as long as the engines' and the inbox's `waitMs`). */
export const DEFAULT_DYNAMODB_MARK_WAIT_MS = 5_000

/** What `dynamodbStore` takes: the DynamoDB client, the table, the per-call timeout, the inbox and `once` hold, and how long a mark waits for another's. */
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
  /**
   * How long a `once` mark waits for another open transaction that holds the same pair
   * before it fails with `StoreUnavailableError` (retryable: roll back and run again).
   * DynamoDB cannot see two transactions waiting on each other's marks, as Postgres
   * sees a deadlock, so this bound ends such a wait: the younger transaction gives up
   * after `markWaitMs`, the older after twice that, so the older commits. `0` waits not
   * at all. @default 5000
   */
  markWaitMs?: number
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

const OPTIONS = optionNames<DynamoStoreOptions>({ client: true, table: true, timeoutMs: true, holdMs: true, markWaitMs: true })

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
  const { client, table, timeoutMs = DEFAULT_DYNAMODB_TIMEOUT_MS, holdMs = DEFAULT_DYNAMODB_HOLD_MS, markWaitMs = DEFAULT_DYNAMODB_MARK_WAIT_MS } = options
  if (client === null || typeof client !== 'object' || typeof client.send !== 'function') {
    throw new InvalidOptionError('dynamodbStore: option "client" must be a DynamoDBClient from @aws-sdk/client-dynamodb')
  }
  if (typeof table !== 'string' || !/^[A-Za-z0-9_.-]{3,255}$/.test(table)) {
    throw new InvalidOptionError(`dynamodbStore: option "table" must be a DynamoDB table name (3–255 of A-Z a-z 0-9 _ . -), got ${JSON.stringify(table)}`)
  }
  assertDuration('dynamodbStore: option "timeoutMs"', timeoutMs, 1)
  assertDuration('dynamodbStore: option "holdMs"', holdMs, 3)
  assertDuration('dynamodbStore: option "markWaitMs"', markWaitMs, 0)
  const wire = wireFor(client, table, timeoutMs)
  const leased = dynamoLeasedStore(wire)

  return {
    name: 'dynamodb',
    maxOutcomeBytes: leased.maxOutcomeBytes,
    table,
    claim: leased.claim,
    peek: leased.peek,
    inbox: dynamoInboxTable(wire, holdMs),
    once: dynamoOnceTable(wire, holdMs, markWaitMs),
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
    createTable: () => createIdemTable(client, table),
  }
}
