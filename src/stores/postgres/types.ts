/**
 * The parts of `pg` the store uses, typed by shape so that idem does not depend on
 * `pg`'s types: a `pg.Pool` and a `pg.PoolClient` (or `pg.Client`) fit.
 */
export interface PgQueryResult {
  rows: unknown[]
  rowCount: number | null
  command: string
}

/**
 * The one method idem runs SQL through in a caller's transaction: `query(text, values)`
 * with `$n` placeholders. A pg client fits; `fromKysely` and `fromDrizzle` make one of
 * an ORM's open transaction.
 */
export interface PgExecutor {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>
}

export interface PgClient extends PgExecutor {
  // A text holding several statements (no values) resolves to one result per statement.
  query(text: string, values?: unknown[]): Promise<PgQueryResult>
  escapeLiteral(value: string): string
}

export interface PgPoolClient extends PgClient {
  release(destroy?: boolean | Error): void
  // A pg client is an EventEmitter; the store listens for its 'error' while it holds it (held-client.ts).
  on?(event: 'error', listener: (error: Error) => void): unknown
  removeListener?(event: 'error', listener: (error: Error) => void): unknown
}

export interface PgPool {
  connect(): Promise<PgPoolClient>
}
