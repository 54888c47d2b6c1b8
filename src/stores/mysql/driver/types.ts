/**
 * The parts of `mysql2/promise` the MySQL store uses, typed by shape so that idem does
 * not depend on mysql2's types: a `Pool` and a `PoolConnection` (or `Connection`) fit.
 */

/**
 * The one method idem runs SQL through: `query(text, values)` with `?` placeholders,
 * one statement per call, resolving to `[rows or result header, fields]`. A mysql2
 * promise connection or pool fits; `fromKysely` and `fromDrizzle` make one of an ORM's
 * open transaction. This is the `tx` a call's function writes through.
 */
export interface MysqlExecutor {
  /** Runs one statement with `?` placeholders bound to `values`. */
  query(text: string, values?: unknown[]): Promise<[unknown, unknown]>
}

/** A connection taken from the pool, as idem holds one for the transactions it opens itself: a mysql2 `PoolConnection` fits. */
export interface MysqlPoolConnection extends MysqlExecutor {
  /** The server's id of the connection (`CONNECTION_ID()`). */
  readonly threadId: number | null
  /** Returns the connection to the pool. */
  release(): void
  /** Closes the connection at once (the server rolls its transaction back). */
  destroy(): void
  // A mysql2 connection is an EventEmitter; the store listens while it holds one (store-driver.ts).
  /** Listens for the connection's end (the server closed it) or a fatal error. */
  on?(event: 'end' | 'error', listener: (error?: Error) => void): unknown
  /** Stops listening once idem hands the connection back. */
  removeListener?(event: 'end' | 'error', listener: (error?: Error) => void): unknown
}

/** The pool the store takes connections from: a mysql2 promise `Pool` (`mysql.createPool(…)` from `mysql2/promise`) fits. */
export interface MysqlPool extends MysqlExecutor {
  /** Takes a connection from the pool. */
  getConnection(): Promise<MysqlPoolConnection>
}
