import { UpdateItemCommand, type AttributeValue, type TransactWriteItem } from '@aws-sdk/client-dynamodb'
import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'
import { conditionFailed } from '../errors.js'
import { preparedUpdate, type Expressions } from '../expressions.js'
import { N, S, type Item } from '../items.js'
import { transact } from '../transact.js'
import type { LeasedContext } from './context.js'
import { headKey } from './head.js'

// Every write after the claim: held, the caller's token, and not expired (the read-side
// check: DynamoDB deletes expired items only eventually).
const FENCE = '#state = :held AND #token = :token AND #expiresAt > :now'

/** The values a fenced update's call gives: its own (`V`) and the fence's, the token and the time. */
export type FenceValues<V extends string> = Readonly<Record<V | ':token' | ':now', AttributeValue>>

/** A fenced update of the claim item, made once; a call gives only its values. */
export type FencedUpdate<V extends string> = (values: FenceValues<V>) => Expressions & { UpdateExpression: string }

/**
 * An update of the claim item under the fence, made once (at module load): `update`
 * bumps the version (`#ver = #ver + :one`); `constants` are its values that never
 * change, `variables` the ones each call gives besides the fence's `:token` and `:now`.
 */
export function fencedUpdate<V extends string>(update: string, constants: Record<string, AttributeValue>, variables: readonly V[]): FencedUpdate<V> {
  const given: Array<V | ':token' | ':now'> = [':token', ':now', ...variables]
  return preparedUpdate({ condition: FENCE, update }, { ':held': S('held'), ':one': N(1), ...constants }, given)
}

/** A fenced UpdateItem of the claim item, at the time it is sent; false when the fence did not hold, else the attributes `returnValues` asks for. */
export async function fenced<V extends string>(
  context: LeasedContext,
  operation: string,
  pk: string,
  token: number,
  update: FencedUpdate<V>,
  values: Readonly<Record<V, AttributeValue>>,
  returnValues: 'NONE' | 'ALL_NEW' | 'ALL_OLD' = 'NONE',
): Promise<Item | false> {
  const t = context.now()
  try {
    const output = await context.wire.send<{ Attributes?: Item }>(
      operation,
      new UpdateItemCommand({ TableName: context.TableName, Key: headKey(pk), ReturnValues: returnValues, ...update({ ...values, ':token': N(token), ':now': N(t) }) }),
    )
    return output.Attributes ?? {}
  } catch (error) {
    if (conditionFailed(error)) return false
    throw error
  }
}

/** The fenced update of the claim item at time `t` as the first action of a transaction, for the writes that must land with it. */
export function fencedAction<V extends string>(
  context: LeasedContext,
  pk: string,
  token: number,
  t: number,
  update: FencedUpdate<V>,
  values: Readonly<Record<V, AttributeValue>>,
): TransactWriteItem {
  return { Update: { TableName: context.TableName, Key: headKey(pk), ...update({ ...values, ':token': N(token), ':now': N(t) }) } }
}

/**
 * Commits a transaction whose first action is `fencedAction`: true when it committed,
 * false when the fence did not hold; any other cancellation is `StoreUnavailableError`.
 */
export async function commitFenced(context: LeasedContext, operation: string, actions: TransactWriteItem[]): Promise<boolean> {
  const outcome = await transact(context.wire, operation, actions)
  if (outcome.committed) return true
  if (outcome.codes[0] === 'ConditionalCheckFailed') return false
  throw new StoreUnavailableError(`DynamoDB cancelled ${operation} (${outcome.codes.join(', ')})`)
}
