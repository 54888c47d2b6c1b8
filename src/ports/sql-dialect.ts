/**
 * The port of `idem/data`'s SQL helpers (`upsertSql`, `upsert`, `reconcile`): what one
 * SQL database writes differently in the statements they run on the caller's own
 * tables, and how a statement runs on that database's client. Each SQL store implements
 * it in its own folder (`postgresDialect` from `idem/postgres`, `sqliteDialect` from
 * `idem/sqlite`), the only code that knows the dialect and the driver; the helpers
 * validate and quote the names, write the standard SQL around these pieces, bind the
 * values and make the report.
 *
 * `Client` is what the caller passes: a pg client or pool, an SQLite database.
 * `Written` is what a write returns: a promise on Postgres, a boolean on SQLite, which
 * writes synchronously so that a write fits inside `db.transaction(...)`.
 */
export interface SqlDialect<Client, Written extends boolean | Promise<boolean> = boolean | Promise<boolean>> {
  /** The database, for messages: `Postgres`, `SQLite`. */
  readonly name: string
  /** What a client of this dialect is, for messages: `a pg client or pool`. */
  readonly clientName: string
  /** Whether `value` has the shape of this dialect's client. */
  isClient(value: unknown): value is Client
  /** The placeholder of the `index`th bound value, counting from 1: `$1` or `?`. */
  placeholder(index: number): string
  /**
   * The target of an `INSERT … ON CONFLICT … DO UPDATE`, and how the update's `WHERE`
   * names the row already there.
   * @param table the quoted, possibly schema-qualified table
   * @param name the quoted table name alone
   */
  upsertTarget(table: string, name: string): { into: string; existing: string }
  /**
   * A condition true when any of the quoted `columns` of `existing` differs from the
   * same column of `excluded`, NULL-safe: NULL to NULL is no change.
   */
  changed(existing: string, columns: readonly string[]): string
  /** Runs a write: true when it inserted or changed a row. */
  write(client: Client, text: string, values: readonly unknown[]): Written
  /** Runs a read: every row it returns. */
  read(client: Client, text: string, values: readonly unknown[]): Promise<unknown[]>
  /** Whether `error` says that a table or column a statement named does not exist. */
  namesMissing(error: unknown): boolean
}

/** A SQL dialect with a client to run it on: what a store's operator reads the caller's tables through. */
export interface SqlConnection<Client = unknown> {
  readonly dialect: SqlDialect<Client>
  readonly client: Client
}
