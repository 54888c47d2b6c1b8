import type { PeekResult } from '../../../ports/key-peek.js'
import { leasePk } from '../items.js'
import type { LeasedContext } from './context.js'
import { readHead } from './head.js'
import { readRecord } from './outcome.js'

// Answers that carry nothing are made once.
const ABSENT: PeekResult = { state: 'absent' }
const HELD: PeekResult = { state: 'held' }

/** What the key holds now, read without claiming it: a live completed record, a live lease or steps to resume (`held`), or nothing. */
export async function peek(context: LeasedContext, scope: string, key: string): Promise<PeekResult> {
  const pk = leasePk(scope, key)
  const head = await readHead(context, pk)
  const t = context.now()
  if (head === undefined || head.expiresAt <= t) return ABSENT
  if (head.state === 'completed') return { state: 'completed', record: await readRecord(context, pk, head) }
  if ((head.state === 'held' && head.leaseUntil > t) || head.steps) return HELD
  return ABSENT
}
