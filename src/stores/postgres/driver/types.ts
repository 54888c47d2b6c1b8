import type { CancellableClient } from './cancel.js'

/**
 * The parts of `pg` the store uses, typed by shape so that idem does not depend on
 * `pg`'s types: a `pg.Pool` and a `pg.PoolClient` (or `pg.Client`) fit.
 */
export interface PgQueryResult<Row extends object = Record<string, unknown>> {
  rows: Row[]
  rowCount: number | null
  command: string
}

/**
 * The one method idem runs SQL through in a caller's transaction: `query(text, values)`
 * with `$n` placeholders, one statement per call. A pg client fits; `fromKysely` and
 * `fromDrizzle` (executors.ts) make one of an ORM's open transaction.
 */
export interface PgExecutor {
  /**
   * Runs one statement with `$n` placeholders bound to `values`. `Row` is the shape of the
   * rows you expect, as with pg's own `query<Row>`: it is what you declare, not checked.
   * @example
   * const tx: PgClient = fromPg(await pool.connect())
   * const { rows } = await tx.query<{ id: string }>('INSERT INTO orders (body) VALUES ($1) RETURNING id', [body])
   * const id: string | undefined = rows[0]?.id
   */
  query<Row extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>
}

/**
 * The transaction a call's function is given, and the `tx` a call may join: an
 * executor that also quotes literals as pg does. Sessions idem opens itself hand out
 * pg clients (`PgPoolClient`); a joined call hands back what it was given, a pg client
 * or an ORM's transaction made one by `fromKysely` or `fromDrizzle`.
 */
export interface PgClient extends PgExecutor {
  /** Quotes `value` as a SQL string literal, as pg's `escapeLiteral` does. */
  escapeLiteral(value: string): string
}

/** A pooled client, as idem uses one for the sessions it opens itself: a `pg.PoolClient` fits. */
export interface PgPoolClient extends PgClient, CancellableClient {
  // idem's own sessions send several statements in one text (no values): pg then resolves
  // to one result per statement, which only a real pg client does.
  /** Runs a statement (or, without values, several in one text: one result each). */
  query<Row extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PgQueryResult<Row>>
  /** Returns the client to the pool; with an error (or true) the pool destroys it instead. */
  release(destroy?: boolean | Error): void
  // A pg client is an EventEmitter; the store listens for its 'error' while it holds it (held-client.ts).
  /** Listens for the client's `error` event while idem holds it. */
  on?(event: 'error', listener: (error: Error) => void): unknown
  /** Stops listening for `error` once idem hands the client back. */
  removeListener?(event: 'error', listener: (error: Error) => void): unknown
  /** Tells when the connection has closed (after the pool destroyed the client). */
  once?(event: 'end', listener: () => void): unknown
}

/** How `pg.Pool#connect` hands over a client when given a callback: at once, in the pool's own call stack. */
export type PgConnectCallback = (error: Error | undefined, client: PgPoolClient | undefined) => void

/**
 * The pool the store checks clients out of: a `pg.Pool` fits. The store calls
 * `connect(callback)` and listens on the client inside the callback (see
 * `checkOut`); a wrapper of the pool should take the callback and hand it on. One whose
 * `connect` declares no parameter is called for its promise, with the gap `checkOut`
 * describes.
 */
export interface PgPool {
  /** Checks a client out of the pool. */
  connect(): Promise<PgPoolClient>
  /** Checks a client out of the pool and calls `callback` with it. */
  connect(callback: PgConnectCallback): void
}
