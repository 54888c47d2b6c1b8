import { PutItemCommand } from '@aws-sdk/client-dynamodb'
import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'
import { NO_STEPS, type LeaseClaim } from '../../../ports/leased-store.js'
import { conditionFailed } from '../errors.js'
import { preparedExpression, type Expressions } from '../expressions.js'
import { N, leasePk } from '../items.js'
import type { LeasedContext } from './context.js'
import { Head, headItem, readHead, type Claimant, type Fencing } from './head.js'
import { DynamoLease, release } from './lease.js'
import { readRecord } from './outcome.js'
import { readSteps } from './steps.js'

const NEW_KEY: Expressions = preparedExpression({ condition: 'attribute_not_exists(#pk)' }, {}, [])({})
const ON_VERSION = preparedExpression({ condition: '#ver = :ver' }, {}, [':ver'])

/** One attempt at a claim: the claimant, from one reading of the caller's clock (`t`, and `clock`, t in µs: a new key's token). */
interface Attempt extends Claimant {
  readonly context: LeasedContext
  readonly t: number
  readonly clock: number
}

/** A claim's put that the condition refused: the key was there, and `found` is what was (when DynamoDB sent it back). */
interface Refused {
  readonly found: Head | undefined
}

const WRITTEN = 'written'

/**
 * Claims the key: a conditional put of its claim item, on a new key
 * `attribute_not_exists`, otherwise on the version it read, so two claims of one key
 * never both succeed. A put that loses a race is tried again with what is there now;
 * after 50 lost races the claim fails with `StoreUnavailableError`.
 */
export async function claim(context: LeasedContext, scope: string, key: string, fingerprint: string, leaseMs: number, ttlMs: number): Promise<LeaseClaim> {
  const pk = leasePk(scope, key)
  for (let attempt = 0; attempt < 50; attempt++) {
    const t = context.now()
    const claimed = await claimOnce({ context, pk, scope, key, fingerprint, t, leaseUntil: t + leaseMs, expiresAt: t + leaseMs + ttlMs, clock: t * 1000 })
    if (claimed !== undefined) return claimed
  }
  throw new StoreUnavailableError('DynamoDB: the claim kept losing races for the same key; try again')
}

// A put on a new key, or, on a key that is there, what it holds decides. Undefined: a race was lost.
async function claimOnce(attempt: Attempt): Promise<LeaseClaim | undefined> {
  const { clock } = attempt
  const put = await putHead(attempt, { token: clock, gen: clock, ver: 1, steps: false }, NEW_KEY)
  if (put === WRITTEN) return { state: 'acquired', lease: new DynamoLease(attempt.context, attempt.pk, clock), steps: NO_STEPS }
  const head = put.found ?? (await readHead(attempt.context, attempt.pk))
  if (head === undefined) return undefined // deleted meanwhile: claim afresh
  return claimOver(attempt, head)
}

// A key that is there: expired (a new key), completed, held, or free to take over with its steps.
async function claimOver(attempt: Attempt, head: Head): Promise<LeaseClaim | undefined> {
  const { context, pk, t } = attempt
  const state = head.state
  const ver = head.ver
  const token = Math.max((head.token ?? 0) + 1, attempt.clock)
  const onVersion = ON_VERSION({ ':ver': N(ver) })

  if (head.expiresAt <= t) {
    // An expired key is a new key: a new lifetime starts at this token, and steps
    // and outcome parts of the old one (older tokens) are ignored from now on.
    const put = await putHead(attempt, { token, gen: token, ver: ver + 1, steps: false }, onVersion)
    return put === WRITTEN ? { state: 'acquired', lease: new DynamoLease(context, pk, token), steps: NO_STEPS } : undefined
  }
  const holder = head.fingerprint
  if (state === 'completed') return { state: 'completed', record: await readRecord(context, pk, head) }
  if (state === 'held' && head.leaseUntil > t) return { state: 'running', fingerprint: holder }
  const resumable = head.steps
  if (resumable && holder !== attempt.fingerprint) return { state: 'running', fingerprint: holder }
  const gen = head.gen ?? token
  const put = await putHead(attempt, { token, gen, ver: ver + 1, steps: resumable }, onVersion)
  if (put !== WRITTEN) return undefined
  // The put bumped the version, so no step of an older holder can land after this read.
  return { state: 'acquired', lease: new DynamoLease(context, pk, token), steps: resumable ? await readSteps(context, pk, gen, attempt.expiresAt) : NO_STEPS }
}

/** The conditional put of the claim item: WRITTEN, or refused with what was there. */
async function putHead(attempt: Attempt, fencing: Fencing, condition: Expressions): Promise<typeof WRITTEN | Refused> {
  const { context, pk } = attempt
  // The caller gave up on this claim (timeoutMs), so nobody will run under it: hand it back.
  const late = () => void release(context, pk, fencing.token).catch(() => {})
  try {
    await context.wire.send(
      'claim',
      new PutItemCommand({ TableName: context.TableName, Item: headItem(attempt, fencing), ReturnValuesOnConditionCheckFailure: 'ALL_OLD', ...condition }),
      late,
    )
    return WRITTEN
  } catch (error) {
    if (!conditionFailed(error)) throw error
    return { found: error.Item === undefined ? undefined : new Head(error.Item) }
  }
}
