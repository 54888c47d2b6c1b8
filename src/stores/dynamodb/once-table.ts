import { PutItemCommand } from '@aws-sdk/client-dynamodb'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import type { OnceTable } from '../../ports/once-table.js'
import { conditionFailed } from './errors.js'
import { expression } from './expressions.js'
import { HEAD_SK, N, S, oncePk, str, ttlOf } from './items.js'
import type { Wire } from './wire.js'
import { WriteSet, holdToken, type DynamoTx } from './write-set.js'

/** What one attempt to claim a mark found: it is this set's now, or another's (held, or marked for good). */
type Claim = { readonly taken: true } | { readonly taken: false; readonly marked: boolean; readonly seniority: string }

/**
 * `once` on DynamoDB, under `pk = once#<hash>`. A write set cannot read, so a mark is
 * claimed at once: a conditional put of a `held` item (with the set's token, its
 * seniority and an expiry `holdMs` ahead, renewed while the set is open) that the set's
 * commit turns `marked` on condition of its token, and its rollback deletes. A second
 * transaction marking the same pair finds it held and waits until it is marked (false)
 * or gone (true), as a row lock would make it wait, but not for ever: DynamoDB has no
 * lock manager to see two transactions waiting on each other's marks, so a waiter gives
 * up with `StoreUnavailableError` after `markWaitMs` when the holder is the older set
 * and after twice that when it is the younger. Of two sets crossing marks the younger
 * gives up first, its rollback hands its marks back, and the older commits; any cycle
 * of waits has a waiter younger than its holder, so every cycle ends.
 */
export function dynamoOnceTable(wire: Wire, holdMs: number, markWaitMs: number, now: () => number = Date.now): OnceTable<DynamoTx> {
  const TableName = wire.table

  return {
    async mark(tx, kind, subject) {
      if (!(tx instanceof WriteSet) || tx.ended) {
        throw new InvalidOptionError('once: "tx" must be an open transaction of this DynamoDB store (store.transaction(async (tx) => …))')
      }
      const pair = `${kind.length}:${kind}${subject}`
      if (tx.marks.has(pair)) return false
      const pk = oncePk(kind, subject)
      const started = now()
      let delay = 10
      for (;;) {
        const token = holdToken()
        const found = await claimMark(wire, holdMs, now(), { pk, kind, subject, token, seniority: tx.seniority })
        if (found.taken) {
          tx.marks.add(pair)
          // Marks are kept until deleted: no expiry, no TTL.
          const final = () => ({
            Put: {
              TableName,
              Item: { pk: S(pk), sk: S(HEAD_SK), kind: S(kind), subject: S(subject), state: S('marked'), markedAt: N(now()) },
              ...expression({ condition: '#token = :token' }, { ':token': S(token) }),
            },
          })
          tx.hold({ pk, token, final })
          return true
        }
        if (found.marked) {
          tx.marks.add(pair)
          return false
        }
        const patience = tx.seniority < found.seniority ? 2 * markWaitMs : markWaitMs
        const left = started + patience - now()
        if (left <= 0) {
          throw new StoreUnavailableError(
            `once(${JSON.stringify(kind)}, ${JSON.stringify(subject)}): another open transaction still holds this mark after this one waited ${patience} ms ` +
              `(markWaitMs${patience > markWaitMs ? ', doubled for the older of the two' : ''}); it gives up so that transactions waiting on each other's marks end: roll it back and retry it`,
          )
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left) * (0.5 + Math.random() / 2)))
        delay = Math.min(delay * 2, 250)
      }
    },
  }
}

/** A mark one set asks for: the pair, its item's key, and the set's token and seniority. */
interface Asked {
  readonly pk: string
  readonly kind: string
  readonly subject: string
  readonly token: string
  readonly seniority: string
}

/** Puts a held mark unless another set holds it (live) or it is marked, and says which. */
async function claimMark(wire: Wire, holdMs: number, t: number, { pk, kind, subject, token, seniority }: Asked): Promise<Claim> {
  try {
    await wire.send(
      'once',
      new PutItemCommand({
        TableName: wire.table,
        Item: { pk: S(pk), sk: S(HEAD_SK), kind: S(kind), subject: S(subject), state: S('held'), token: S(token), seniority: S(seniority), expiresAt: N(t + holdMs), ttl: ttlOf(t + holdMs) },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ...expression({ condition: 'attribute_not_exists(#pk) OR (#state = :held AND #expiresAt <= :now)' }, { ':held': S('held'), ':now': N(t) }),
      }),
    )
    return { taken: true }
  } catch (error) {
    if (!conditionFailed(error)) throw error
    // A hold written before holds carried a seniority counts as the older.
    return { taken: false, marked: str(error.Item, 'state') === 'marked', seniority: str(error.Item, 'seniority') ?? '' }
  }
}
