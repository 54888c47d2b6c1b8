import { DeleteItemCommand } from '@aws-sdk/client-dynamodb'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { assertCount, assertKnownOptions, optionNames } from '../../../core/errors/option-checks.js'
import type { PruneOptions } from '../../../ports/operator.js'
import { conditionFailed } from '../errors.js'
import { expression, type Expressions } from '../expressions.js'
import { N, keyOf, type Item } from '../items.js'
import type { Wire } from '../wire.js'
import { scan } from './scan.js'

const PRUNE_OPTIONS = optionNames<PruneOptions>({ batchSize: true, deliveredOutboxOlderThanMs: true, onBatch: true })

// Expired by the read side's rule (`expiresAt`, in ms), or, for the items that carry only
// a TTL (outcome and step parts, failure counts), past it. A `once` mark and a dead
// letter carry neither: they are kept.
const EXPIRED = '#expiresAt <= :now OR (attribute_not_exists(#expiresAt) AND #ttl <= :seconds)'
const expiredValues = (t: number): Item => ({ ':now': N(t), ':seconds': N(Math.floor(t / 1000)) })
// Deletes run this many at a time: each is conditional, so none can be batched.
const PARALLEL_DELETES = 16

/** How many items are expired now (one scan of the table). */
export async function expiredCount(wire: Wire): Promise<number> {
  let count = 0
  for await (const page of scan(wire, 'expiredCount', { filter: EXPIRED }, expiredValues(Date.now()))) count += page.count
  return count
}

/** Deletes the items expired now, `batchSize` at a time, each only if it still is; how many it deleted. */
export async function prune(wire: Wire, prune: PruneOptions = {}): Promise<number> {
  assertKnownOptions('prune', prune, PRUNE_OPTIONS)
  // No outbox here: `deliveredOutboxOlderThanMs` has nothing to delete.
  const { batchSize = 1_000, onBatch } = prune
  assertCount('prune: option "batchSize"', batchSize, 1)
  if (onBatch !== undefined && typeof onBatch !== 'function') throw new InvalidOptionError('prune: option "onBatch" must be a function (deleted) => void')
  const t = Date.now()
  // One time for the whole prune, so one condition for every delete.
  const stillExpired = expression({ condition: EXPIRED }, expiredValues(t))
  let deleted = 0
  let waiting: Item[] = []
  const deleteBatch = async (batch: Item[]): Promise<void> => {
    let done = 0
    for (let i = 0; i < batch.length; i += PARALLEL_DELETES) {
      for (const gone of await Promise.all(batch.slice(i, i + PARALLEL_DELETES).map((item) => deleteExpired(wire, item, stillExpired)))) if (gone) done++
    }
    deleted += done
    onBatch?.(done)
  }
  for await (const { items } of scan(wire, 'prune', { filter: EXPIRED, projection: '#pk, #sk' }, expiredValues(t))) {
    waiting.push(...items)
    while (waiting.length >= batchSize) {
      await deleteBatch(waiting.slice(0, batchSize))
      waiting = waiting.slice(batchSize)
    }
  }
  if (waiting.length > 0) await deleteBatch(waiting)
  return deleted
}

/** Deletes the item if it is still expired; false when it was not (renewed, claimed again, gone). */
async function deleteExpired(wire: Wire, item: Item, stillExpired: Expressions): Promise<boolean> {
  try {
    await wire.send('prune', new DeleteItemCommand({ TableName: wire.table, Key: keyOf(item), ...stillExpired }))
    return true
  } catch (error) {
    if (conditionFailed(error)) return false
    throw error
  }
}
