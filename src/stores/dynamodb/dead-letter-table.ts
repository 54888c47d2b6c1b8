import { QueryCommand } from '@aws-sdk/client-dynamodb'
import type { DeadLetterRow, DeadLetterTable } from '../../ports/dead-letter-table.js'
import { expression } from './expressions.js'
import { S, deadPk, num, str, type Item } from './items.js'
import type { Wire } from './wire.js'

/**
 * Dead letters on DynamoDB: one partition per source (`pk = dead#inbox`), sorted by
 * when they died, so the newest come first. They are rare, and listing one consumer's
 * filters that partition.
 */
export function dynamoDeadLetterTable(wire: Wire): DeadLetterTable {
  return {
    async list({ source, name, limit }) {
      const rows: DeadLetterRow[] = []
      let start: Item | undefined
      do {
        const page = await wire.send<{ Items?: Item[]; LastEvaluatedKey?: Item }>(
          'deadLetters',
          new QueryCommand({
            TableName: wire.table,
            ScanIndexForward: false,
            ExclusiveStartKey: start,
            ...expression({ keyCondition: '#pk = :pk', ...(name === null ? {} : { filter: '#name = :name' }) }, { ':pk': S(deadPk(source)), ...(name === null ? {} : { ':name': S(name) }) }),
          }),
        )
        for (const item of page.Items ?? []) {
          if (rows.length >= limit) break
          const payload = str(item, 'payload')
          rows.push({
            id: str(item, 'sk')!,
            source,
            name: str(item, 'name') ?? '',
            messageKey: str(item, 'messageKey') ?? '',
            payload: payload === undefined ? null : (JSON.parse(payload) as unknown),
            attempts: num(item, 'attempts') ?? 0,
            lastError: str(item, 'lastError') ?? '',
            firstSeenAt: new Date(num(item, 'firstSeenAt') ?? 0),
            deadAt: new Date(num(item, 'deadAt') ?? 0),
          })
        }
        start = page.LastEvaluatedKey
      } while (start !== undefined && rows.length < limit)
      return rows
    },
  }
}
