import { ScanCommand } from '@aws-sdk/client-dynamodb'
import { expression, namesOf } from '../expressions.js'
import type { Item } from '../items.js'
import type { Wire } from '../wire.js'

/** Every page of a scan of the table: the items' `projection`, or only their count. */
export async function* scan(wire: Wire, operation: string, parts: { filter?: string; projection?: string }, values: Item = {}): AsyncGenerator<{ items: Item[]; count: number }> {
  const expressions = expression(parts.filter === undefined ? {} : { filter: parts.filter }, values)
  const names = { ...expressions.ExpressionAttributeNames, ...namesOf(parts.projection) }
  let start: Item | undefined
  do {
    const page = await wire.send<{ Items?: Item[]; Count?: number; LastEvaluatedKey?: Item }>(
      operation,
      new ScanCommand({
        TableName: wire.table,
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
