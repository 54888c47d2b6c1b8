import type { Result, Row, Statement, Step } from './statement.js'

/**
 * What a SQL store's driver gives the protocol (src/stores/sql/): connections of the
 * store's own for its transactions, the caller's transaction joined, statements run
 * on their own, and every error it lets through already classified
 * (`StoreUnavailableError` when the database cannot serve, `MigrationRequiredError`
 * when idem's tables are missing, the driver's own error otherwise). The driver is the
 * only code that knows its client library. `Tx` is the transaction a call's function
 * writes through; `Wrote` is what a write in the caller's transaction answers: a
 * promise, or, for a synchronous driver (SQLite), the value itself.
 */
export interface StoreDriver<Tx, Wrote extends boolean | Promise<boolean> = Promise<boolean>> {
  /**
   * A connection of the store's own, for one transaction claiming `lock`'s key. A
   * driver whose claim statement takes the key's lock in the database (Postgres,
   * MySQL) only checks one out. One whose connection is shared by every transaction
   * (SQLite) holds the key in process first, waiting up to `lock.waitMs` for its other
   * holder: `Locked` when it did not let go in time.
   */
  connect(lock: KeyLock): Promise<Connection<Tx> | Locked<Tx>>
  /**
   * Reads outside any transaction (a retry's record), on a connection of its own:
   * the rows, and the `tx` a session that holds nothing hands out. Undefined when the
   * driver cannot read committed rows right now (SQLite: a joined call's uncommitted
   * record is visible on the shared connection until its caller ends the transaction).
   */
  lookup(step: Step): Promise<{ tx: Tx; rows: readonly unknown[] } | undefined>
  /**
   * The caller's open transaction, checked, to run the protocol's statements in (the
   * `tx` of a call, of `outbox.add`, of `once`).
   * @throws InvalidOptionError naming `use` when `tx` is not one the driver can write through
   */
  join<T>(tx: T, use: JoinUse): Joined<T, Wrote>
  /** Runs `statements` in one short transaction of their own (a single one by itself), and answers their results. */
  transaction(statements: readonly Statement[]): Promise<Result[]>
  /** Runs one statement that only reads, on its own: the operator's. */
  query(statement: Statement): Promise<Result>
  /**
   * Runs a migration plan (migrations.ts), its own transaction, and answers what it returned: at once for a synchronous driver (SQLite's `migrate()` returns its
   * result), as a promise otherwise.
   */
  migrate<T>(plan: Plan<T>): T | Promise<T>
}

/** The key a transaction will claim, and how long to wait for its holder. */
export interface KeyLock {
  readonly scope: string
  readonly key: string
  readonly waitMs: number
}

/** Who joins the caller's transaction: the driver words its refusal for each. */
export type JoinUse = 'run' | 'once' | 'outbox.add'

/** A connection the driver held for a key that another holder kept past the wait: nothing to end. */
export interface Locked<Tx> {
  readonly locked: true
  /** The transaction handle a session that holds nothing hands out, never written through. */
  readonly tx: Tx
}

/** A connection of the store's own, holding one transaction from the round trip that opens it until it is released or ended. */
export interface Connection<Tx> {
  readonly locked?: false
  /** The transaction the call's function writes through. */
  readonly tx: Tx
  /**
   * Sends `steps` in one round trip (where the driver can) and answers one result each.
   * `where` says what the steps do to the transaction: `opens` (the first step begins
   * it), `inside` (it is open), `outside` (none is).
   */
  send(steps: readonly Step[], where: 'opens' | 'outside' | 'inside'): Promise<Result[]>
  /** Runs one statement in the open transaction, its values and rows as the client library maps them (dates as dates). */
  run(statement: Statement): Promise<Result>
  /** Hands the connection back, its transaction over (committed, or never opened). */
  release(): void
  /** Rolls back whatever is open and hands the connection back (destroyed when it failed); never throws. */
  end(cause?: unknown): Promise<void>
  /** Ends the connection at once, whatever runs on it (see `Session.abandon`); only where `fences`. Never throws. */
  abandon?(): Promise<void>
  /** Why the connection was lost while held, once it was. */
  readonly lost?: Error | undefined
}

/** The caller's transaction, as the protocol writes through it. */
export interface Joined<Tx, Wrote extends boolean | Promise<boolean>> {
  readonly tx: Tx
  /** Runs `steps`, one after the other, in the caller's transaction. */
  send(steps: readonly Step[]): Promise<Result[]>
  /** Runs one write: true when it wrote exactly one row. */
  wroteOne(statement: Statement): Wrote
  /**
   * The session wrote its record in this transaction, uncommitted until the caller
   * ends it: a driver whose replay reads share the connection stops trusting them
   * until then (see `lookup`).
   */
  recorded?(): void
}

/**
 * A migration as the protocol writes it (migrations.ts): a generator that yields each
 * statement's text, from the one that begins its transaction to its COMMIT, and
 * receives its rows. The driver runs them on one connection and rolls back when one
 * fails.
 */
export type Plan<T> = Generator<string, T, readonly Row[]>
