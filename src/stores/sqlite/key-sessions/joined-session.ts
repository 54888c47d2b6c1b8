import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import type { Claim, NewRecord, Session } from '../../../core/store.js'
import type { SqliteDatabase } from '../../../ports/sql-clients.js'
import { inTransaction } from '../connection.js'
import type { StoreStatements } from '../store-statements.js'
import { claimOf, joinedRecordsOpen, type KeyContext } from './context.js'

/**
 * A key claimed inside the caller's open transaction (`run`'s option `tx`, the store's
 * own database): `commit` only writes the record, and ending the transaction is the
 * caller's. Until then the record is uncommitted, so replays on the connection wait for
 * their turn (`joinedRecordsOpen`).
 */
export class JoinedSession implements Session<SqliteDatabase> {
  readonly joined = true
  readonly #statements: StoreStatements
  readonly #scope: string
  readonly #key: string

  /**
   * Reads the key in `tx`.
   * @throws InvalidOptionError when `tx` is not the store's database, or has no open transaction
   */
  static open({ db, statements }: KeyContext, tx: SqliteDatabase, scope: string, key: string): JoinedSession {
    if (tx !== db) throw new InvalidOptionError('run: option "tx" must be the same Database the SQLite store was created with')
    if (!inTransaction(db)) throw new InvalidOptionError('run: option "tx" was given but the Database has no open transaction (BEGIN IMMEDIATE first)')
    return new JoinedSession(statements, db, claimOf(statements.read(scope, key)), scope, key)
  }

  private constructor(statements: StoreStatements, readonly tx: SqliteDatabase, readonly claim: Claim, scope: string, key: string) {
    this.#statements = statements
    this.#scope = scope
    this.#key = key
  }

  async commit(record: NewRecord): Promise<void> {
    this.#statements.save(this.#scope, this.#key, record)
    joinedRecordsOpen.add(this.tx)
  }

  async rollback(): Promise<void> {}
}
