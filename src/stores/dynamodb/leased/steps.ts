import { BatchWriteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import { MAX_DURATION_MS } from '../../../core/errors/option-checks.js'
import { conditionFailed } from '../errors.js'
import { preparedExpression } from '../expressions.js'
import { BOOL, N, S, STEP_SK, keyOf, num, partsOf, stepSk, str, ttlOf, type Item } from '../items.js'
import type { LeasedContext } from './context.js'
import { commitFenced, fencedAction, fencedUpdate } from './fence.js'
import { itemsUnder, partPuts, partSk } from './partition.js'

// A step item's TTL, which only collects garbage: saveStep does not know the claim's
// retention, so it takes the longest one there can be (lease + ttl, each at most
// MAX_DURATION_MS); a claim or renewal that pushes the key's expiry further pushes its
// steps' too. Abandoned steps are thus collected up to ~50 days late, never early.
const STEP_HORIZON_MS = 2 * MAX_DURATION_MS

const SAVE_STEP = fencedUpdate('SET #steps = :true, #ver = #ver + :one', { ':true': BOOL(true) }, [])
const EXTEND_TTL = preparedExpression({ condition: 'attribute_exists(#pk)', update: 'SET #ttl = :ttl' }, {}, [':ttl'])

/**
 * Saves a step under `step#<hash of name>` (parts `…#<i>`), in one transaction with a
 * fenced update of the claim item that marks the key as having steps: a replaced
 * holder's step is refused with it (false).
 */
export async function saveStep(context: LeasedContext, pk: string, token: number, name: string, result: string): Promise<boolean> {
  const t = context.now()
  const sk = stepSk(name)
  const parts = partsOf(result)
  const ttl = t + STEP_HORIZON_MS
  return commitFenced(context, 'saveStep', [
    fencedAction(context, pk, token, t, SAVE_STEP, {}),
    {
      Put: {
        TableName: context.TableName,
        Item: { pk: S(pk), sk: S(sk), name: S(name), result: S(parts[0]!), parts: N(parts.length), token: N(token), ttl: ttlOf(ttl) },
      },
    },
    ...partPuts(context, pk, sk, token, parts, ttl),
  ])
}

/** The steps of the current lifetime (saved with a token ≥ `gen`), parts joined; their TTL pushed to `expiresAt` where shorter. */
export async function readSteps(context: LeasedContext, pk: string, gen: number, expiresAt: number): Promise<Map<string, string>> {
  const items = await itemsUnder(context.wire, 'claim', pk, STEP_SK)
  const bySk = new Map(items.map((item) => [str(item, 'sk')!, item]))
  const steps = new Map<string, string>()
  const short: Item[] = []
  for (const item of items) {
    const name = str(item, 'name')
    const token = num(item, 'token') ?? 0
    if (name === undefined || token < gen) continue
    let result = str(item, 'result') ?? ''
    const sk = str(item, 'sk')!
    for (let i = 1; i < (num(item, 'parts') ?? 1); i++) {
      const part = bySk.get(partSk(sk, i))
      if (part === undefined || num(part, 'token') !== token) throw new Error(`idem: step ${JSON.stringify(name)} is missing part ${i}`)
      result += str(part, 'data') ?? ''
      if ((num(part, 'ttl') ?? 0) * 1000 < expiresAt) short.push(part)
    }
    if ((num(item, 'ttl') ?? 0) * 1000 < expiresAt) short.push(item)
    steps.set(name, result)
  }
  await extendTtl(context, short, expiresAt)
  return steps
}

/** Pushes the items' TTL to `expiresAt`; an item gone meanwhile is skipped. */
async function extendTtl(context: LeasedContext, items: Item[], expiresAt: number): Promise<void> {
  if (items.length === 0) return
  const extend = EXTEND_TTL({ ':ttl': ttlOf(expiresAt) })
  await Promise.all(
    items.map((item) =>
      context.wire.send('claim', new UpdateItemCommand({ TableName: context.TableName, Key: keyOf(item), ...extend })).catch((error: unknown) => {
        if (!conditionFailed(error)) throw error
      }),
    ),
  )
}

/** Deletes a completed key's steps. Best effort: they are never read again (a new lifetime ignores them) and their TTL collects them. */
export async function dropSteps(context: LeasedContext, pk: string): Promise<void> {
  const items = await itemsUnder(context.wire, 'complete', pk, STEP_SK)
  for (let i = 0; i < items.length; i += 25) {
    const batch = items.slice(i, i + 25).map((item) => ({ DeleteRequest: { Key: keyOf(item) } }))
    await context.wire.send('complete', new BatchWriteItemCommand({ RequestItems: { [context.TableName]: batch } }))
  }
}
