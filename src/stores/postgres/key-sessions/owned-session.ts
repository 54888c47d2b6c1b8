import type { Claim, NewRecord, Session } from '../../../core/store.js'
import { classifyPgError } from '../driver/errors.js'
import { endClient, type HeldClient } from '../driver/held-client.js'
import * as sql from '../dialect/index.js'
import type { PgClient, PgPoolClient } from '../driver/types.js'
import type { Step } from '../driver/wire.js'
import type { KeyContext } from './context.js'

const COMMIT: Step = { statement: sql.COMMIT }

/**
 * A key claimed in a transaction of the store's own: open on a client checked out for
 * it, until `commit`, `rollback` or `abandon` ends it (the first to come; the others
 * then do nothing). A class, not an object of closures: one is built for every fresh
 * call, its methods never.
 */
export class OwnedSession implements Session<PgClient> {
  readonly tx: PgPoolClient
  readonly joined = false
  readonly #context: KeyContext
  readonly #client: HeldClient
  readonly #scope: string
  readonly #key: string
  #ended = false

  constructor(context: KeyContext, client: HeldClient, readonly claim: Claim, scope: string, key: string) {
    this.tx = client.client
    this.#context = context
    this.#client = client
    this.#scope = scope
    this.#key = key
  }

  lost(): Error | undefined {
    return this.#client.lost
  }

  async commit(record: NewRecord): Promise<void> {
    this.#ended = true
    const context = this.#context
    const client = this.#client
    const { table } = context
    const save = table.save(this.#scope, this.#key, record.fingerprint, record.outcome, record.ttlMs)
    try {
      await context.wire.send(client, [{ statement: table.prepared.save, values: save.values }, COMMIT], 'inside')
    } catch (error) {
      await endClient(client, error)
      throw classifyPgError(error, context.schema)
    }
    client.release()
    context.recorded.add(this.#scope, this.#key)
  }

  async rollback(): Promise<void> {
    if (this.#ended) return
    this.#ended = true
    await endClient(this.#client)
  }

  // The function may still be using the client: it is closed, not returned to the pool.
  async abandon(): Promise<void> {
    if (this.#ended) return
    this.#ended = true
    await this.#client.abandon()
  }
}
