import { DeleteItemCommand, GetItemCommand, QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../../core/validate.js'
import type { KeyInspection, PruneOptions, StoreOperator, TableStats } from '../../ports/operator.js'
import { statusOf } from '../inspection.js'
import { conditionFailed } from './errors.js'
import { expression, namesOf } from './expressions.js'
import { HEAD_SK, N, S, STEP_SK, leasePk, num, str, type Item } from './items.js'
import { wireFor, type DynamoClient } from './wire.js'

/** What `dynamodbOperator` takes: the client, the store's table, and how long one request may take. */
export interface DynamoOperatorOptions {
  /** An AWS SDK v3 `DynamoDBClient` (`@aws-sdk/client-dynamodb`). The operator never closes it. */
  client: DynamoClient
  /** The store's table (`dynamodbStore`'s `table`). */
  table: string
  /** How long one request (a page of a scan, a delete) may wait for DynamoDB before `StoreUnavailableError`. @default 10000 */
  timeoutMs?: number
}

const OPTIONS = optionNames<DynamoOperatorOptions>({ client: true, table: true, timeoutMs: true })
const PRUNE_OPTIONS = optionNames<PruneOptions>({ batchSize: true, deliveredOutboxOlderThanMs: true, onBatch: true })

// Expired by the read side's rule (`expiresAt`, in ms), or, for the items that carry only
// a TTL (outcome and step parts, failure counts), past it. A `once` mark and a dead
// letter carry neither: they are kept.
const EXPIRED = '#expiresAt <= :now OR (attribute_not_exists(#expiresAt) AND #ttl <= :seconds)'
const expiredValues = (t: number): Item => ({ ':now': N(t), ':seconds': N(Math.floor(t / 1000)) })
// Deletes run this many at a time: each is conditional, so none can be batched.
const PARALLEL_DELETES = 16

/**
 * The operator of a DynamoDB store's table: one key's claim, lease and steps; counts of
 * leases, inbox ids and dead letters; expired items and their pruning. DynamoDB's TTL
 * deletes expired items itself, but only eventually (typically within days), and the
 * store never reads them; `prune` deletes them now, each with a condition that it is
 * still expired. Counting and pruning scan the whole table: run them off-peak on large
 * ones. What `idem stats|inspect|prune --dynamodb` run. Time is this machine's clock,
 * as the store's.
 * @example
 * const operator = dynamodbOperator({ client: new DynamoDBClient({}), table: 'idem' })
 * const { leases } = await operator.stats(86_400_000)
 * await operator.prune({ batchSize: 500 })
 */
export function dynamodbOperator(options: DynamoOperatorOptions): StoreOperator & Required<Pick<StoreOperator, 'stats' | 'expiredCount' | 'prune'>> {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('dynamodbOperator: pass { client, table }')
  assertKnownOptions('dynamodbOperator', options, OPTIONS)
  const { client, table, timeoutMs = 10_000 } = options
  if (client === null || typeof client !== 'object' || typeof client.send !== 'function') {
    throw new InvalidOptionError('dynamodbOperator: option "client" must be a DynamoDBClient from @aws-sdk/client-dynamodb')
  }
  if (typeof table !== 'string' || !/^[A-Za-z0-9_.-]{3,255}$/.test(table)) {
    throw new InvalidOptionError(`dynamodbOperator: option "table" must be a DynamoDB table name (3–255 of A-Z a-z 0-9 _ . -), got ${JSON.stringify(table)}`)
  }
  assertDuration('dynamodbOperator: option "timeoutMs"', timeoutMs, 1)
  const wire = wireFor(client, table, timeoutMs)
  const TableName = table

  /** Every page of a scan of the table: the items' `projection`, or only their count. */
  async function* scan(operation: string, parts: { filter?: string; projection?: string }, values: Item = {}): AsyncGenerator<{ items: Item[]; count: number }> {
    const expressions = expression(parts.filter === undefined ? {} : { filter: parts.filter }, values)
    const names = { ...expressions.ExpressionAttributeNames, ...namesOf(parts.projection) }
    let start: Item | undefined
    do {
      const page = await wire.send<{ Items?: Item[]; Count?: number; LastEvaluatedKey?: Item }>(
        operation,
        new ScanCommand({
          TableName,
          ...expressions,
          ...(Object.keys(names).length === 0 ? {} : { ExpressionAttributeNames: names }),
          ...(parts.projection === undefined ? { Select: 'COUNT' } : { ProjectionExpression: parts.projection }),
          ExclusiveStartKey: start,
        }),
      )
      yield { items: page.Items ?? [], count: page.Count ?? 0 }
      start = page.LastEvaluatedKey
    } while (start !== undefined)
  }

  /** Deletes the item if it is still expired; false when it was not (renewed, claimed again, gone). */
  async function deleteExpired(item: Item, t: number): Promise<boolean> {
    try {
      await wire.send('prune', new DeleteItemCommand({ TableName, Key: { pk: item.pk!, sk: item.sk! }, ...expression({ condition: EXPIRED }, expiredValues(t)) }))
      return true
    } catch (error) {
      if (conditionFailed(error)) return false
      throw error
    }
  }

  /** The step heads of a leased key saved by its current lifetime (tokens from `gen` on). */
  async function steps(pk: string, gen: number): Promise<NonNullable<KeyInspection['lease']>['steps']> {
    const found: NonNullable<KeyInspection['lease']>['steps'] = []
    let start: Item | undefined
    do {
      const page = await wire.send<{ Items?: Item[]; LastEvaluatedKey?: Item }>(
        'inspect',
        new QueryCommand({
          TableName,
          ConsistentRead: true,
          ExclusiveStartKey: start,
          ...expression({ keyCondition: '#pk = :pk AND begins_with(#sk, :prefix)' }, { ':pk': S(pk), ':prefix': S(STEP_SK) }),
        }),
      )
      for (const item of page.Items ?? []) {
        const name = str(item, 'name')
        const token = num(item, 'token') ?? 0
        // Parts carry no name; steps of an earlier lifetime are ignored by the store too.
        if (name !== undefined && token >= gen) found.push({ name, savedAt: null, token: String(token) })
      }
      start = page.LastEvaluatedKey
    } while (start !== undefined)
    return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  return {
    backend: 'DynamoDB',

    async inspect(scope, key) {
      const t = Date.now()
      const iso = (ms: number): string => new Date(ms).toISOString()
      const pk = leasePk(scope, key)
      const { Item: head } = await wire.send<{ Item?: Item }>('inspect', new GetItemCommand({ TableName, Key: { pk: S(pk), sk: S(HEAD_SK) }, ConsistentRead: true }))
      const report: KeyInspection = { scope, key, now: iso(t) }
      const state = str(head, 'state')
      if (head === undefined || (state !== 'held' && state !== 'free' && state !== 'completed')) return report
      const expiresAt = num(head, 'expiresAt') ?? 0
      // A free or completed key keeps no lease; a completed key's steps are garbage.
      const leaseUntil = state === 'held' ? num(head, 'leaseUntil') : undefined
      report.lease = {
        state,
        fingerprint: str(head, 'fp') ?? '',
        token: String(num(head, 'token') ?? ''),
        leaseUntil: leaseUntil === undefined ? null : iso(leaseUntil),
        leaseLive: leaseUntil !== undefined && leaseUntil > t,
        expiresAt: iso(expiresAt),
        expired: expiresAt <= t,
        status: statusOf(str(head, 'outcome')),
        steps: state === 'completed' ? [] : await steps(pk, num(head, 'gen') ?? 0),
      }
      return report
    },

    async stats(windowMs) {
      const t = Date.now()
      const since = t - windowMs
      const stats: TableStats = {
        windowMs,
        leases: { byState: { held: 0, free: 0, completed: 0 }, expired: 0, bytes: null },
        inbox: { live: 0, expired: 0 },
        deadLetters: { total: 0, recent: 0 },
      }
      for await (const { items } of scan('stats', { projection: '#pk, #sk, #state, #expiresAt, #deadAt' })) {
        for (const item of items) {
          const pk = str(item, 'pk') ?? ''
          const head = str(item, 'sk') === HEAD_SK
          const expired = (num(item, 'expiresAt') ?? 0) <= t
          if (pk.startsWith('lease#') && head) {
            const state = str(item, 'state') ?? 'held'
            stats.leases.byState[state] = (stats.leases.byState[state] ?? 0) + 1
            if (expired) stats.leases.expired++
          } else if (pk.startsWith('inbox#') && head) {
            if (expired) stats.inbox.expired++
            else stats.inbox.live++
          } else if (pk.startsWith('dead#')) {
            stats.deadLetters.total++
            if ((num(item, 'deadAt') ?? 0) > since) stats.deadLetters.recent++
          }
        }
      }
      return stats
    },

    async expiredCount() {
      let count = 0
      for await (const page of scan('expiredCount', { filter: EXPIRED }, expiredValues(Date.now()))) count += page.count
      return count
    },

    async prune(prune = {}) {
      assertKnownOptions('prune', prune, PRUNE_OPTIONS)
      // No outbox here: `deliveredOutboxOlderThanMs` has nothing to delete.
      const { batchSize = 1_000, onBatch } = prune
      assertCount('prune: option "batchSize"', batchSize, 1)
      if (onBatch !== undefined && typeof onBatch !== 'function') throw new InvalidOptionError('prune: option "onBatch" must be a function (deleted) => void')
      const t = Date.now()
      let deleted = 0
      let waiting: Item[] = []
      const deleteBatch = async (batch: Item[]): Promise<void> => {
        let done = 0
        for (let i = 0; i < batch.length; i += PARALLEL_DELETES) {
          for (const gone of await Promise.all(batch.slice(i, i + PARALLEL_DELETES).map((item) => deleteExpired(item, t)))) if (gone) done++
        }
        deleted += done
        onBatch?.(done)
      }
      for await (const { items } of scan('prune', { filter: EXPIRED, projection: '#pk, #sk' }, expiredValues(t))) {
        waiting.push(...items)
        while (waiting.length >= batchSize) {
          await deleteBatch(waiting.slice(0, batchSize))
          waiting = waiting.slice(batchSize)
        }
      }
      if (waiting.length > 0) await deleteBatch(waiting)
      return deleted
    },
  }
}
