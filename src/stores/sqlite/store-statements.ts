import type { KeyRecord, NewRecord } from '../../core/store.js'
import type { SqliteDatabase, SqliteStatement } from '../../ports/sql-clients.js'
import { firstRow, inTransaction } from './connection.js'
import { classifySqliteError, guard } from './errors.js'
import * as sql from './sql.js'

/** The key table's two statements: a record read, a record written. */
interface KeyStatements {
  readonly lookup: SqliteStatement
  readonly save: SqliteStatement
}

/**
 * The statements a `sqliteStore` runs on every call, prepared once per store: `exec`
 * and `prepare` parse their SQL on every call, a few µs per transaction. `BEGIN
 * IMMEDIATE` and `COMMIT` are prepared with the store; the key table's statements on
 * first use, since the store is made before `migrate` creates its table, and again after
 * a migration (`forgetKeys`). Each method maps the driver's errors to idem's typed
 * errors, as `guard` does.
 */
export class StoreStatements {
  readonly #db: SqliteDatabase
  readonly #begin: SqliteStatement
  readonly #commit: SqliteStatement
  #keys: KeyStatements | undefined

  constructor(db: SqliteDatabase) {
    this.#db = db
    this.#begin = guard(() => db.prepare('BEGIN IMMEDIATE'))
    this.#commit = guard(() => db.prepare('COMMIT'))
  }

  /** Opens a write transaction (`BEGIN IMMEDIATE`). */
  begin(): void {
    try {
      this.#begin.run()
    } catch (error) {
      throw classifySqliteError(error)
    }
  }

  /** Commits the open transaction. */
  commit(): void {
    try {
      this.#commit.run()
    } catch (error) {
      throw classifySqliteError(error)
    }
  }

  /** Rolls back the open transaction, if there is one; never throws. */
  rollbackQuietly(): void {
    try {
      if (inTransaction(this.#db)) this.#db.exec('ROLLBACK')
    } catch {
      // The connection is closed or the transaction already ended: nothing to undo.
    }
  }

  /** The key's live record, if there is one. */
  read(scope: string, key: string): KeyRecord | undefined {
    let row: KeyRecord | undefined
    try {
      row = firstRow<KeyRecord>(this.#keyStatements().lookup, scope, key, Date.now())
    } catch (error) {
      throw classifySqliteError(error)
    }
    // A record of its own, not the driver's row (node:sqlite's have no prototype).
    return row && { fingerprint: row.fingerprint, outcome: row.outcome }
  }

  /** Writes the key's record, replacing an expired one. */
  save(scope: string, key: string, record: NewRecord): void {
    const now = Date.now()
    try {
      this.#keyStatements().save.run(scope, key, record.fingerprint, record.outcome, now, now + record.ttlMs)
    } catch (error) {
      throw classifySqliteError(error)
    }
  }

  /** Drops the key table's statements: a migration changed the tables they were prepared on. */
  forgetKeys(): void {
    this.#keys = undefined
  }

  #keyStatements(): KeyStatements {
    this.#keys ??= { lookup: this.#db.prepare(sql.lookup), save: this.#db.prepare(sql.save) }
    return this.#keys
  }
}
