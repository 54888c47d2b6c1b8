import type { Claim, NewRecord, Session } from '../../../core/store.js'
import type { SqliteDatabase } from '../../../ports/sql-clients.js'
import type { StoreStatements } from '../store-statements.js'
import { takeTurn } from '../writer.js'
import { claimOf, joinedRecordsOpen, WRITER, type KeyContext } from './context.js'

/**
 * A key claimed in a write transaction of the store's own (`BEGIN IMMEDIATE`), in the
 * connection's turn and holding the key, until `commit` or `rollback` ends it (the
 * first to come; a rollback after it does nothing). A class, not an object of closures:
 * one is built for every fresh call, its methods never.
 */
export class OwnedSession implements Session<SqliteDatabase> {
  readonly joined = false
  readonly #statements: StoreStatements
  readonly #scope: string
  readonly #key: string
  readonly #releaseWriter: () => void
  readonly #leaveKey: () => void
  #ended = false

  /**
   * Takes the connection's turn for the key held (`leaveKey` lets it go), opens the
   * transaction and reads the key in it. Hands the turn and the key on if that fails.
   */
  static async open({ db, busyTimeoutMs, statements }: KeyContext, scope: string, key: string, leaveKey: () => void): Promise<OwnedSession> {
    let releaseWriter: () => void
    try {
      // Also waits out a transaction opened outside idem's queue (the caller's own BEGIN).
      releaseWriter = await takeTurn(db, busyTimeoutMs, WRITER)
    } catch (error) {
      leaveKey()
      throw error
    }
    joinedRecordsOpen.delete(db)
    let claim: Claim
    try {
      statements.begin()
      try {
        // Read again inside the write lock: another process may have committed meanwhile.
        claim = claimOf(statements.read(scope, key))
      } catch (error) {
        statements.rollbackQuietly()
        throw error
      }
    } catch (error) {
      releaseWriter()
      leaveKey()
      throw error
    }
    return new OwnedSession(statements, db, claim, scope, key, releaseWriter, leaveKey)
  }

  private constructor(
    statements: StoreStatements,
    readonly tx: SqliteDatabase,
    readonly claim: Claim,
    scope: string,
    key: string,
    releaseWriter: () => void,
    leaveKey: () => void,
  ) {
    this.#statements = statements
    this.#scope = scope
    this.#key = key
    this.#releaseWriter = releaseWriter
    this.#leaveKey = leaveKey
  }

  async commit(record: NewRecord): Promise<void> {
    this.#ended = true
    try {
      this.#statements.save(this.#scope, this.#key, record)
      this.#statements.commit()
    } catch (error) {
      this.#statements.rollbackQuietly()
      throw error
    } finally {
      this.#end()
    }
  }

  async rollback(): Promise<void> {
    if (this.#ended) return
    this.#ended = true
    this.#statements.rollbackQuietly()
    this.#end()
  }

  /** Hands the connection's turn on, then the key. */
  #end(): void {
    this.#releaseWriter()
    this.#leaveKey()
  }
}
