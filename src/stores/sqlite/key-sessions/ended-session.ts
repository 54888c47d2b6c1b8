import type { Claim, Session } from '../../../core/store.js'
import type { SqliteDatabase } from '../../../ports/sql-clients.js'

/**
 * A session that holds nothing and has nothing to end: a retry answered by its
 * committed record, read without a turn in the writer's queue, or a key whose lock
 * another call held for longer than `waitMs`.
 */
export class EndedSession implements Session<SqliteDatabase> {
  readonly joined = false

  constructor(
    /** The store's database, never written through. */
    readonly tx: SqliteDatabase,
    readonly claim: Claim,
  ) {}

  async commit(): Promise<void> {}

  async rollback(): Promise<void> {}
}
