import type { KeyRecord } from '../../../ports/key-store.js'
import { N, OUTCOME_PART_SK, S, num, partsOf, str, ttlOf } from '../items.js'
import type { LeasedContext } from './context.js'
import { commitFenced, fenced, fencedAction, fencedUpdate } from './fence.js'
import { Head } from './head.js'
import { itemsUnder, partPuts, partSk } from './partition.js'
import { dropSteps } from './steps.js'

const COMPLETE = fencedUpdate(
  'SET #state = :completed, #outcome = :outcome, #outcomeParts = :parts, #expiresAt = :expiresAt, #ttl = :ttl, #ver = #ver + :one REMOVE #leaseUntil',
  { ':completed': S('completed') },
  [':outcome', ':parts', ':expiresAt', ':ttl'],
)

/**
 * Completes the key with `outcome`, kept `ttlMs`: one fenced update of the claim item,
 * or, for an outcome past one item, a transaction of it with the outcome's other parts
 * (`#outcome#<i>`). False when the fence did not hold. Then drops the key's steps.
 */
export async function complete(context: LeasedContext, pk: string, token: number, outcome: string, ttlMs: number): Promise<boolean> {
  const t = context.now()
  const expiresAt = t + ttlMs
  const parts = partsOf(outcome)
  const values = { ':outcome': S(parts[0]!), ':parts': N(parts.length), ':expiresAt': N(expiresAt), ':ttl': ttlOf(expiresAt) }
  let hadSteps: boolean
  if (parts.length === 1) {
    const before = await fenced(context, 'complete', pk, token, COMPLETE, values, 'ALL_OLD')
    if (before === false) return false
    hadSteps = new Head(before).steps
  } else {
    const committed = await commitFenced(context, 'complete', [
      fencedAction(context, pk, token, t, COMPLETE, values),
      ...partPuts(context, pk, OUTCOME_PART_SK, token, parts, expiresAt),
    ])
    if (!committed) return false
    hadSteps = true
  }
  // Off the caller's path: the outcome is stored, the steps are garbage.
  if (hadSteps) dropSteps(context, pk).catch(() => {})
  return true
}

/** The completed record `head` holds: its fingerprint and its outcome, parts joined. */
export async function readRecord(context: LeasedContext, pk: string, head: Head): Promise<KeyRecord> {
  return { fingerprint: head.fingerprint, outcome: await readOutcome(context, pk, head) }
}

async function readOutcome(context: LeasedContext, pk: string, head: Head): Promise<string> {
  const parts = head.outcomeParts
  let outcome = head.outcome
  if (parts <= 1) return outcome
  const token = head.token
  const found = new Map((await itemsUnder(context.wire, 'claim', pk, OUTCOME_PART_SK)).map((item) => [str(item, 'sk')!, item]))
  for (let i = 1; i < parts; i++) {
    const part = found.get(partSk(OUTCOME_PART_SK, i))
    if (part === undefined || num(part, 'token') !== token) throw new Error(`idem: the outcome is missing part ${i}`)
    outcome += str(part, 'data') ?? ''
  }
  return outcome
}
