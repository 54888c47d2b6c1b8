import { GetItemCommand, PutItemCommand, UpdateItemCommand, DeleteItemCommand } from '@aws-sdk/client-dynamodb'
import type { InboxSession, InboxTable, PriorFailures } from '../../ports/inbox-table.js'
import { MAX_DURATION_MS } from '../../core/errors/option-checks.js'
import { conditionFailed } from './errors.js'
import { expression } from './expressions.js'
import { ATTEMPTS_SK, HEAD_SK, N, S, deadPk, inboxPk, num, str, ttlOf, type Item } from './items.js'
import type { Wire } from './wire.js'
import { WriteSet, holdToken, type DynamoTx } from './write-set.js'
import { createHash } from 'node:crypto'
import { settledInboxSession } from '../settled-inbox-session.js'

// A failure count lives from a message's first failure to its success or dead letter;
// one that is never finished is collected after the longest retention there can be.
const ATTEMPTS_HORIZON_MS = 2 * MAX_DURATION_MS

/**
 * The inbox's table on DynamoDB. Per `(consumer, key)`, under `pk = inbox#<hash>`: the
 * id item (`sk = '#'`), `held` by one delivery (a token and an expiry `holdMs` ahead,
 * renewed while the delivery runs) or `processed` until its retention ends, and the
 * failure count (`sk = 'attempts'`). A delivery claims the id with a conditional put
 * (absent or expired); its commit is one `TransactWriteItems`: the id turned
 * `processed` on condition of its own token, the failure count's removal, a dead
 * letter, and every write the handler staged. A delivery that lost its claim (it ran
 * past `holdMs` without renewing and another took over) commits nothing.
 */
export function dynamoInboxTable(wire: Wire, holdMs: number, now: () => number = Date.now): InboxTable<DynamoTx> {
  return {
    async begin({ consumer, key, waitMs, retentionMs }) {
      const id = { pk: inboxPk(consumer, key), consumer, key }
      const deadline = Date.now() + Math.max(0, waitMs)
      let delay = 10
      for (;;) {
        const tx = new WriteSet(wire, holdMs)
        const claimed = await claim(wire, id, holdMs, now)
        if (claimed.token !== undefined) {
          tx.hold({ pk: id.pk, token: claimed.token, final: () => processedPut(wire.table, id, claimed.token, now() + retentionMs) })
          return newSession(wire, tx, id, now)
        }
        if (claimed.state === 'processed') return settledInboxSession<DynamoTx>('processed', tx)
        const left = deadline - Date.now()
        if (left <= 0) return settledInboxSession<DynamoTx>('in-flight', tx)
        await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left) * (0.5 + Math.random() / 2)))
        delay = Math.min(delay * 2, 250)
      }
    },
    recordFailure: (consumer, key, error) => recordFailure(wire, consumer, key, error, now()),
  }
}

/** One message id of one consumer: its partition key, and the two it was made from. */
interface InboxId {
  readonly pk: string
  readonly consumer: string
  readonly key: string
}

/** Claims the id with a conditional put (absent or expired): its hold token, or the state of the item that holds it. */
async function claim(wire: Wire, { pk, consumer, key }: InboxId, holdMs: number, now: () => number): Promise<{ token: string; state?: undefined } | { token?: undefined; state: string | undefined }> {
  const t = now()
  const token = holdToken()
  const expiresAt = t + holdMs
  try {
    await wire.send(
      'begin',
      new PutItemCommand({
        TableName: wire.table,
        Item: { pk: S(pk), sk: S(HEAD_SK), consumer: S(consumer), key: S(key), state: S('held'), token: S(token), expiresAt: N(expiresAt), ttl: ttlOf(expiresAt) },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ...expression({ condition: 'attribute_not_exists(#pk) OR #expiresAt <= :now' }, { ':now': N(t) }),
      }),
      // The caller gave up on this claim: hand it back rather than hold it for holdMs.
      () => void release(wire, pk, token),
    )
    return { token }
  } catch (error) {
    if (!conditionFailed(error)) throw error
    return { state: str(error.Item, 'state') }
  }
}

/** The id turned `processed` until `until`, on condition of the delivery's own token: part of its commit. */
function processedPut(TableName: string, { pk, consumer, key }: InboxId, token: string, until: number): Parameters<WriteSet['own']>[0] {
  return {
    Put: {
      TableName,
      Item: { pk: S(pk), sk: S(HEAD_SK), consumer: S(consumer), key: S(key), state: S('processed'), expiresAt: N(until), ttl: ttlOf(until) },
      ...expression({ condition: '#token = :token' }, { ':token': S(token) }),
    },
  }
}

/** A delivery that holds its id: the failure count taken and a dead letter staged in its write set. */
function newSession(wire: Wire, tx: WriteSet, { pk, consumer, key }: InboxId, now: () => number): InboxSession<DynamoTx> {
  const TableName = wire.table
  let tookFailures = false
  return {
    state: 'new',
    tx,
    async takeFailures(): Promise<PriorFailures | undefined> {
      const { Item } = await wire.send<{ Item?: Item }>('takeFailures', new GetItemCommand({ TableName, Key: { pk: S(pk), sk: S(ATTEMPTS_SK) }, ConsistentRead: true }))
      if (Item === undefined) return undefined
      if (!tookFailures) tx.own({ Delete: { TableName, Key: { pk: S(pk), sk: S(ATTEMPTS_SK) } } })
      tookFailures = true
      return { attempts: num(Item, 'attempts') ?? 0, lastError: str(Item, 'lastError') ?? '', firstFailedAt: new Date(num(Item, 'firstFailedAt') ?? 0) }
    },
    async deadLetter(letter) {
      const deadAt = now()
      const id = `${new Date(deadAt).toISOString()}#${createHash('sha256').update(pk).digest('base64url').slice(0, 16)}`
      const firstSeenAt = (letter.firstSeenAt ?? new Date(deadAt)).getTime()
      tx.own({
        Put: {
          TableName,
          Item: {
            pk: S(deadPk('inbox')),
            sk: S(id),
            name: S(consumer),
            messageKey: S(key),
            payload: S(letter.payload),
            attempts: N(letter.attempts),
            lastError: S(letter.error),
            firstSeenAt: N(firstSeenAt),
            deadAt: N(deadAt),
          },
        },
      })
    },
    commit: () => tx.commit(),
    rollback: () => tx.rollback(),
    // Safe while the handler still runs: its later writes throw ("this transaction has ended").
    abandon: () => tx.rollback(),
  }
}

async function recordFailure(wire: Wire, consumer: string, key: string, error: string, t: number): Promise<number> {
  const { Attributes } = await wire.send<{ Attributes?: Item }>(
    'recordFailure',
    new UpdateItemCommand({
      TableName: wire.table,
      Key: { pk: S(inboxPk(consumer, key)), sk: S(ATTEMPTS_SK) },
      ReturnValues: 'UPDATED_NEW',
      ...expression(
        {
          update:
            'ADD #attempts :one SET #lastError = :error, #firstFailedAt = if_not_exists(#firstFailedAt, :now), #lastFailedAt = :now, #consumer = :consumer, #key = :key, #ttl = :ttl',
        },
        { ':one': N(1), ':error': S(error), ':now': N(t), ':consumer': S(consumer), ':key': S(key), ':ttl': ttlOf(t + ATTEMPTS_HORIZON_MS) },
      ),
    }),
  )
  return num(Attributes, 'attempts') ?? 1
}

async function release(wire: Wire, pk: string, token: string): Promise<void> {
  await wire
    .send('rollback', new DeleteItemCommand({ TableName: wire.table, Key: { pk: S(pk), sk: S(HEAD_SK) }, ...expression({ condition: '#token = :token' }, { ':token': S(token) }) }))
    .catch(() => {})
}
