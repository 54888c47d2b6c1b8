import { randomUUID } from 'node:crypto'
import { DeleteItemCommand, UpdateItemCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb'
import { LeaseLostError } from '../../core/errors/lease-lost.js'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { conditionFailed } from './errors.js'
import { expression } from './expressions.js'
import { HEAD_SK, N, S, ttlOf } from './items.js'
import { MAX_TRANSACTION_ITEMS, transact } from './transact.js'
import type { Wire } from './wire.js'

/**
 * The DynamoDB store's transaction, as the inbox's handler and `once` see it: a write
 * set. Each `write` stages one `TransactWriteItems` action (a `Put`, `Update`, `Delete`
 * or `ConditionCheck` on any table the client can reach in its region), and the set is
 * committed in **one** `TransactWriteItems` together with idem's own records (the
 * message id, a `once` mark), so they all happen or none does.
 *
 * What it cannot do, being DynamoDB's transaction and not a database session:
 * - read: nothing staged is visible (to the handler or anyone) before the commit, and
 *   reads the handler makes are not part of the transaction (guard them with a
 *   `ConditionCheck` or a condition on the write instead);
 * - hold more than 100 actions in all, idem's own included (`room` says how many are
 *   left), or more than 4 MB; or touch one item twice;
 * - cover anything outside DynamoDB: an HTTP call, an email, another database.
 * A staged write whose own condition fails cancels the whole transaction: the commit
 * throws, nothing is written, and the inbox counts a failed attempt.
 *
 * @example
 * await inbox.consume(message, async (tx) => {
 *   tx.write({ Put: { TableName: 'orders', Item: { id: { S: message.body.orderId } }, ConditionExpression: 'attribute_not_exists(id)' } })
 * })
 */
export interface DynamoTx {
  /** Stages one action of the transaction. @throws RangeError when the transaction is full or already ended */
  write(action: TransactWriteItem): void
  /** How many more actions fit in the transaction. */
  readonly room: number
}

/** A claim (an inbox id, a `once` mark) the set holds until it ends: renewed while open, finalised at commit, deleted on rollback. */
interface Hold {
  pk: string
  token: string
  /** The action that turns the claim into the final record, at commit (conditional on the token). */
  final: () => TransactWriteItem
}

/** A write set with idem's own holds and records; what `store.transaction` and the inbox's sessions hand out. */
export class WriteSet implements DynamoTx {
  readonly #wire: Wire
  readonly #holdMs: number
  readonly #writes: TransactWriteItem[] = []
  readonly #own: TransactWriteItem[] = []
  readonly #holds: Hold[] = []
  /** `once` pairs this set has marked (or found marked): a second mark in it is false. */
  readonly marks = new Set<string>()
  /**
   * When the set began, as text that sorts the older set first (its start in ms, then a
   * random tie-break). Its marks carry it, so that two sets waiting on each other's
   * marks agree, whatever their clocks, which of them is the younger and gives up first.
   */
  readonly seniority = `${String(Date.now()).padStart(16, '0')}#${randomUUID()}`
  #timer: NodeJS.Timeout | undefined
  #ended = false

  constructor(wire: Wire, holdMs: number) {
    this.#wire = wire
    this.#holdMs = holdMs
  }

  get room(): number {
    return MAX_TRANSACTION_ITEMS - this.#writes.length - this.#own.length - this.#holds.length
  }

  get ended(): boolean {
    return this.#ended
  }

  write(action: TransactWriteItem): void {
    if (this.#ended) throw new RangeError('idem/dynamodb: this transaction has ended')
    if (this.room <= 0) throw new RangeError(`idem/dynamodb: a DynamoDB transaction holds at most ${MAX_TRANSACTION_ITEMS} actions, idem's own included`)
    if (action === null || typeof action !== 'object') throw new TypeError('idem/dynamodb: write takes one TransactWriteItems action ({ Put }, { Update }, { Delete } or { ConditionCheck })')
    this.#writes.push(action)
  }

  /** Stages one of idem's own actions (a failure count's removal, a dead letter). */
  own(action: TransactWriteItem): void {
    if (this.room <= 0) throw new RangeError(`idem/dynamodb: a DynamoDB transaction holds at most ${MAX_TRANSACTION_ITEMS} actions`)
    this.#own.push(action)
  }

  /** Keeps a claim (written by the caller with `token`) until the set ends, renewing it every third of `holdMs`. */
  hold(hold: Hold): void {
    this.#holds.push(hold)
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#renew(), Math.max(1, Math.floor(this.#holdMs / 3)))
      this.#timer.unref()
    }
  }

  /** Commits everything staged, with the holds' final records, in one transaction. */
  async commit(): Promise<void> {
    if (this.#ended) throw new RangeError('idem/dynamodb: this transaction has ended')
    this.#ended = true
    this.#stop()
    const finals = this.#holds.map((hold) => hold.final())
    const items = [...finals, ...this.#own, ...this.#writes]
    if (items.length === 0) return
    let result
    try {
      result = await transact(this.#wire, 'commit', items)
    } catch (error) {
      await this.#releaseHolds()
      throw error
    }
    if (result.committed) return
    await this.#releaseHolds()
    const failed = result.codes.findIndex((code) => code !== 'None')
    if (failed >= 0 && failed < finals.length && result.codes[failed] === 'ConditionalCheckFailed') {
      throw new LeaseLostError(
        `idem/dynamodb: the transaction's claim lapsed (it was held longer than holdMs without a renewal) and another took it; nothing was written`,
      )
    }
    if (result.codes.includes('TransactionConflict')) throw new StoreUnavailableError('DynamoDB kept cancelling the transaction for conflicts; nothing was written')
    const own = finals.length + this.#own.length
    const which = failed >= own ? `the handler's write ${failed - own} of ${this.#writes.length}` : `idem's record ${failed}`
    throw new Error(`idem/dynamodb: DynamoDB cancelled the transaction: ${which} failed (${result.codes[failed]}); nothing was written`)
  }

  /** Ends the set writing nothing, and hands its claims back. Never throws. */
  async rollback(): Promise<void> {
    if (this.#ended) return
    this.#ended = true
    this.#stop()
    await this.#releaseHolds()
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
  }

  async #releaseHolds(): Promise<void> {
    await Promise.all(
      this.#holds.map((hold) =>
        this.#wire
          .send(
            'rollback',
            new DeleteItemCommand({
              TableName: this.#wire.table,
              Key: { pk: S(hold.pk), sk: S(HEAD_SK) },
              ...expression({ condition: '#token = :token' }, { ':token': S(hold.token) }),
            }),
          )
          .catch(() => {}),
      ),
    )
  }

  #renew(): void {
    const expiresAt = Date.now() + this.#holdMs
    for (const hold of this.#holds) {
      this.#wire
        .send(
          'renew',
          new UpdateItemCommand({
            TableName: this.#wire.table,
            Key: { pk: S(hold.pk), sk: S(HEAD_SK) },
            ...expression({ condition: '#token = :token', update: 'SET #expiresAt = :expiresAt, #ttl = :ttl' }, { ':token': S(hold.token), ':expiresAt': N(expiresAt), ':ttl': ttlOf(expiresAt) }),
          }),
        )
        // A renewal that fails (lost, or DynamoDB away) shows at commit, whose condition is the token.
        .catch((error: unknown) => void conditionFailed(error))
    }
  }
}

/** A fresh token naming one holder of a claim. */
export const holdToken = (): string => randomUUID()
