import type { AttributeValue } from '@aws-sdk/client-dynamodb'
import { IdemError } from '../../core/errors/idem-error.js'
import { MigrationRequiredError } from '../../core/errors/migration-required.js'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'

// Errors that mean "DynamoDB cannot serve this now": throttling, its own faults, and
// the network. Anything else (a validation error, a bad credential) is a bug or a
// misconfiguration and is thrown as it is.
const UNAVAILABLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'LimitExceededException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
])
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ECONNABORTED'])

/** Maps an SDK error from one of the store's own calls to idem's typed errors. */
export function classifyDynamoError(error: unknown, table: string): unknown {
  if (!(error instanceof Error) || error instanceof IdemError) return error
  const name = error.name
  if (name === 'ResourceNotFoundException') {
    return new MigrationRequiredError(
      `idem's DynamoDB table "${table}" does not exist (${error.message}). Create it: \`await store.createTable()\``,
      { cause: error },
    )
  }
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
  const code = (error as { code?: unknown }).code ?? (error.cause as { code?: unknown } | undefined)?.code
  if (UNAVAILABLE_NAMES.has(name) || (typeof code === 'string' && UNAVAILABLE_ERRNO.has(code)) || (status !== undefined && status >= 500)) {
    return new StoreUnavailableError(`DynamoDB is unavailable: ${error.message || name}`, { cause: error })
  }
  return error
}

/**
 * A conditional write whose condition did not hold (PutItem, UpdateItem, DeleteItem);
 * `Item` is what was there when the write asked for it (`ReturnValuesOnConditionCheckFailure`).
 */
export function conditionFailed(error: unknown): error is Error & { Item?: Record<string, AttributeValue> } {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException'
}

/** Why each action of a cancelled transaction failed (`None` for those that did not). */
export function cancellationCodes(error: unknown): string[] | undefined {
  if (!(error instanceof Error) || error.name !== 'TransactionCanceledException') return undefined
  const reasons = (error as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons
  return reasons?.map((r) => r.Code ?? 'None') ?? []
}
