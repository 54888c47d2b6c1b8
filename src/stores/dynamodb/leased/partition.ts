import { QueryCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb'
import { preparedExpression } from '../expressions.js'
import { N, S, ttlOf, type Item } from '../items.js'
import type { Wire } from '../wire.js'
import type { LeasedContext } from './context.js'

const UNDER = preparedExpression({ keyCondition: '#pk = :pk AND begins_with(#sk, :prefix)' }, {}, [':pk', ':prefix'])

/** Every item under `pk` whose sort key starts with `prefix`, read consistently (the operator's `inspect` reads a key's steps with it too). */
export async function itemsUnder(wire: Wire, operation: string, pk: string, prefix: string): Promise<Item[]> {
  const items: Item[] = []
  const under = UNDER({ ':pk': S(pk), ':prefix': S(prefix) })
  let start: Item | undefined
  do {
    const page = await wire.send<{ Items?: Item[]; LastEvaluatedKey?: Item }>(
      operation,
      new QueryCommand({ TableName: wire.table, ConsistentRead: true, ExclusiveStartKey: start, ...under }),
    )
    items.push(...(page.Items ?? []))
    start = page.LastEvaluatedKey
  } while (start !== undefined)
  return items
}

/** The sort key of the `i`-th part (from 1) of the value whose head is `sk`: `<sk>#<i>`, or `<sk><i>` where `sk` ends in `#`. */
export const partSk = (sk: string, i: number): string => `${sk}${sk.endsWith('#') ? '' : '#'}${i}`

/** The puts of a value's parts after the first (which its head holds), each with the writer's token and a TTL. */
export function partPuts(context: LeasedContext, pk: string, sk: string, token: number, parts: string[], ttl: number): TransactWriteItem[] {
  return parts.slice(1).map((data, i) => ({
    Put: { TableName: context.TableName, Item: { pk: S(pk), sk: S(partSk(sk, i + 1)), token: N(token), data: S(data), ttl: ttlOf(ttl) } },
  }))
}
