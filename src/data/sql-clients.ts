/**
 * The SQL clients the data helpers (upserts, reconcile) write and read through, typed
 * by the shape they use, so `idem/data` depends on no driver: a `pg.Pool`,
 * `pg.PoolClient` or `pg.Client`, and a better-sqlite3 `Database`, fit. Pass the client
 * inside your transaction to make a write part of it.
 */
export interface PgQueryable {
  /** Runs one statement with `$n` placeholders bound to `values`. */
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>
}

/** The part of a better-sqlite3 `Database` the data helpers use. */
export interface SqliteDatabase {
  /** Compiles one statement. */
  prepare(source: string): {
    /** Runs the statement; `changes` is the number of rows it wrote. */
    run(...params: unknown[]): { changes: number }
    /** Every row. */
    all(...params: unknown[]): unknown[]
  }
}
