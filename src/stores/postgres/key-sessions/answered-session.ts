import type { Claim, KeyRecord, Session } from '../../../core/store.js'
import type { PgClient } from '../driver/types.js'

/**
 * A retry answered by its record, read outside any transaction (a key this store
 * recorded lately): its client is back in the pool already, and there is nothing to end.
 */
export class AnsweredSession implements Session<PgClient> {
  readonly claim: Claim
  readonly joined = false

  constructor(
    /** The client the record was read on, already back in the pool: never written through. */
    readonly tx: PgClient,
    record: KeyRecord,
  ) {
    this.claim = { state: 'found', record }
  }

  async commit(): Promise<void> {
    throw new Error('postgresStore: a replayed key has nothing to commit')
  }

  async rollback(): Promise<void> {}
}
