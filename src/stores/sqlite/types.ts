/**
 * The parts of better-sqlite3 the store uses, typed by shape so that idem does not
 * depend on its types: a `Database` from better-sqlite3 12 fits.
 */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number }
  get(...params: unknown[]): unknown
  all(...params: unknown[]): unknown[]
}

/** The database the store runs on: a better-sqlite3 12 `Database` fits. */
export interface SqliteDatabase {
  prepare(source: string): SqliteStatement
  exec(source: string): unknown
  pragma(source: string, options?: { simple?: boolean }): unknown
  readonly inTransaction: boolean
  readonly open: boolean
  readonly name: string
}
