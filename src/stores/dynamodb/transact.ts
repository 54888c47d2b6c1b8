import { randomUUID } from 'node:crypto'
import { TransactWriteItemsCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb'
import { cancellationCodes } from './errors.js'
import type { Wire } from './wire.js'

/** DynamoDB's limit on the actions of one transaction. */
export const MAX_TRANSACTION_ITEMS = 100

/** How a transaction ended: committed, or cancelled with each action's reason (`None` for the actions that were fine). */
export type TransactResult = { committed: true } | { committed: false; codes: string[] }

/**
 * Commits `items` with one `TransactWriteItems`. Another transaction touching the same
 * items at the same moment cancels this one with `TransactionConflict`: it is sent
 * again a few times with a short backoff (a cancelled transaction applied nothing). Each
 * attempt has a client request token of its own, so the SDK's own retry of an attempt
 * that did commit is not applied twice. A failed condition is an answer, not an error.
 */
export async function transact(wire: Wire, operation: string, items: TransactWriteItem[]): Promise<TransactResult> {
  for (let attempt = 0; ; attempt++) {
    try {
      await wire.send(operation, new TransactWriteItemsCommand({ TransactItems: items, ClientRequestToken: randomUUID() }))
      return { committed: true }
    } catch (error) {
      const codes = cancellationCodes(error)
      if (codes === undefined) throw error
      const conflict = codes.includes('TransactionConflict') && !codes.includes('ConditionalCheckFailed')
      if (!conflict || attempt >= 8) return { committed: false, codes }
      await new Promise((resolve) => setTimeout(resolve, 5 * 2 ** attempt * (0.5 + Math.random())))
    }
  }
}
