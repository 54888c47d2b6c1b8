/**
 * The parts of better-sqlite3 the store uses, typed by shape so that idem does not
 * depend on its types: a `Database` from better-sqlite3 12 fits.
 */
export interface SqliteStatement {
  /** Runs the statement; `changes` is the number of rows it wrote. */
  run(...params: unknown[]): { changes: number }
  /** The first row, or undefined. */
  get(...params: unknown[]): unknown
  /** Every row. */
  all(...params: unknown[]): unknown[]
}

/** The database the store runs on: a better-sqlite3 12 `Database` fits. */
export interface SqliteDatabase {
  /** Compiles one statement. */
  prepare(source: string): SqliteStatement
  /** Runs statements without parameters or results. */
  exec(source: string): unknown
  /** Reads or sets a pragma (`simple`: its first value only). */
  pragma(source: string, options?: { simple?: boolean }): unknown
  readonly inTransaction: boolean
  readonly open: boolean
  readonly name: string
}
