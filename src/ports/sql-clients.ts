/**
 * The SQL clients idem writes and reads through, typed by the shape it uses, so that no
 * part of idem depends on a driver: a `pg.Pool`, `pg.PoolClient` or `pg.Client`; and an
 * SQLite database of any of the three drivers below. Pass the client inside your
 * transaction to make a write part of it. The SQLite store (`idem/sqlite`) takes the same
 * `SqliteDatabase` as the data helpers.
 */
export interface PgQueryable {
  /** Runs one statement with `$n` placeholders bound to `values`; `Row` is the shape you expect of its rows (declared, not checked). */
  query<Row extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>
}

/** A prepared statement of a `SqliteDatabase`. */
export interface SqliteStatement {
  /** Runs the statement: how many rows it wrote, and the last row id it inserted (node:sqlite may give bigints). */
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint }
  /** The first row; `undefined` or (bun:sqlite) `null` when there is none. */
  get(...params: unknown[]): unknown
  /** Every row. */
  all(...params: unknown[]): unknown[]
}

/**
 * An open SQLite database, as three drivers give it, each used as it is:
 * - better-sqlite3 (11, 12) `Database`: Node, the native addon;
 * - `bun:sqlite` `Database`: Bun's own;
 * - `node:sqlite` `DatabaseSync`: Deno's, and Node's from 22.16 (Node 20 has none).
 * `inTransaction` (better-sqlite3, bun:sqlite) or `isTransaction` (node:sqlite) says
 * whether a transaction is open on it; the store needs one of the two.
 */
export interface SqliteDatabase {
  /** Compiles one statement. */
  prepare(source: string): SqliteStatement
  /** Runs statements without parameters or results. */
  exec(source: string): unknown
  /** Whether a transaction is open (better-sqlite3, bun:sqlite). */
  readonly inTransaction?: boolean
  /** Whether a transaction is open (node:sqlite). */
  readonly isTransaction?: boolean
}
