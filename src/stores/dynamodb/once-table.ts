import { PutItemCommand } from '@aws-sdk/client-dynamodb'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { OnceTable } from '../../ports/once-table.js'
import { conditionFailed } from './errors.js'
import { expression } from './expressions.js'
import { HEAD_SK, N, S, oncePk, str, ttlOf } from './items.js'
import type { Wire } from './wire.js'
import { WriteSet, holdToken, type DynamoTx } from './write-set.js'

/**
 * `once` on DynamoDB, under `pk = once#<hash>`. A write set cannot read, so a mark is
 * claimed at once: a conditional put of a `held` item (with the set's token and an
 * expiry `holdMs` ahead, renewed while the set is open) that the set's commit turns
 * `marked` on condition of its token, and its rollback deletes. A second transaction
 * marking the same pair finds it held and waits until it is marked (false) or gone
 * (true), as a row lock would make it wait.
 */
export function dynamoOnceTable(wire: Wire, holdMs: number, now: () => number = Date.now): OnceTable<DynamoTx> {
  const TableName = wire.table
  return {
    async mark(tx, kind, subject) {
      if (!(tx instanceof WriteSet) || tx.ended) {
        throw new InvalidOptionError('once: "tx" must be an open transaction of this DynamoDB store (store.transaction(async (tx) => …))')
      }
      const pair = `${kind.length}:${kind}${subject}`
      if (tx.marks.has(pair)) return false
      const pk = oncePk(kind, subject)
      let delay = 10
      for (;;) {
        const t = now()
        const token = holdToken()
        try {
          await wire.send(
            'once',
            new PutItemCommand({
              TableName,
              Item: { pk: S(pk), sk: S(HEAD_SK), kind: S(kind), subject: S(subject), state: S('held'), token: S(token), expiresAt: N(t + holdMs), ttl: ttlOf(t + holdMs) },
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              ...expression({ condition: 'attribute_not_exists(#pk) OR (#state = :held AND #expiresAt <= :now)' }, { ':held': S('held'), ':now': N(t) }),
            }),
          )
        } catch (error) {
          if (!conditionFailed(error)) throw error
          if (str(error.Item, 'state') === 'marked') {
            tx.marks.add(pair)
            return false
          }
          await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random() / 2)))
          delay = Math.min(delay * 2, 250)
          continue
        }
        tx.marks.add(pair)
        tx.hold({
          pk,
          token,
          // Marks are kept until deleted: no expiry, no TTL.
          final: () => ({
            Put: {
              TableName,
              Item: { pk: S(pk), sk: S(HEAD_SK), kind: S(kind), subject: S(subject), state: S('marked'), markedAt: N(now()) },
              ...expression({ condition: '#token = :token' }, { ':token': S(token) }),
            },
          }),
        })
        return true
      }
    },
  }
}
