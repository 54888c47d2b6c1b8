import type { Claim, NewRecord, Session } from '../../../core/store.js'
import { classifyPgError } from '../driver/errors.js'
import { assertExecutor } from '../driver/executors.js'
import type { PgClient } from '../driver/types.js'
import { toClaim, type KeyContext } from './context.js'

/**
 * A key claimed inside the caller's open transaction (`run`'s option `tx`): `commit`
 * only writes the record, and ending the transaction is the caller's.
 */
export class JoinedSession implements Session<PgClient> {
  readonly joined = true
  readonly #context: KeyContext
  readonly #scope: string
  readonly #key: string

  /** Claims the key in `tx`, waiting up to `waitMs` for its lock. */
  static async open(context: KeyContext, tx: PgClient, scope: string, key: string, waitMs: number): Promise<JoinedSession> {
    assertExecutor('run: option "tx"', tx)
    const statement = context.table.claim(scope, key, waitMs)
    let claim: Claim
    try {
      claim = toClaim(await tx.query(statement.text, statement.values))
    } catch (error) {
      throw classifyPgError(error, context.schema)
    }
    return new JoinedSession(context, tx, claim, scope, key)
  }

  private constructor(context: KeyContext, readonly tx: PgClient, readonly claim: Claim, scope: string, key: string) {
    this.#context = context
    this.#scope = scope
    this.#key = key
  }

  async commit(record: NewRecord): Promise<void> {
    const statement = this.#context.table.save(this.#scope, this.#key, record.fingerprint, record.outcome, record.ttlMs)
    try {
      await this.tx.query(statement.text, statement.values)
    } catch (error) {
      throw classifyPgError(error, this.#context.schema)
    }
  }

  async rollback(): Promise<void> {}
}
