import type { Statement } from './statement.js'

/**
 * What an operator (`idem stats|inspect|prune|migrate`) reads, in the dialect's SQL:
 * statements the protocol runs and reads into the `StoreOperator`'s shapes (operator.ts).
 * Times come back as the database keeps them (a `Date`, or epoch milliseconds); counts
 * as numbers or as the text of a bigint; truth values as booleans or 0 and 1. Each
 * statement may depend on which of idem's tables exist (`present`: an older schema, or
 * another key layout, lacks some).
 */
export interface OperatorStatements {
  /** Rows of `name`: every table of idem's (named `idem_…`) in the schema, in order. */
  readonly tables: Statement
  /**
   * Rows of `drop`: one statement per object of idem's in the schema (its tables, with
   * their indexes, partitions and triggers; its functions), in an order that runs:
   * what `idem uninstall` runs in one transaction.
   */
  readonly objects: Statement
  /** Expired rows a prune would delete now (keys, inbox ids, leases): each statement one row, `n`, summed. */
  expired(present: ReadonlySet<string>, now: number): Statement[]
  inspect(present: ReadonlySet<string>, scope: string, key: string, now: number): InspectStatements
  stats(present: ReadonlySet<string>, windowMs: number, now: number): StatsStatements
}

/** One key's rows, for `idem inspect`. */
export interface InspectStatements {
  /** One row, `now`: the database's time. */
  readonly now: Statement
  /** At most one row of the key table (the latest): `fingerprint`, `created_at`, `expires_at`, `expired`, `head` (the outcome's first 20 characters), `bytes` (the outcome's size in bytes). */
  readonly record: Statement
  /** At most one row of `idem_leases`: `fingerprint`, `state`, `token`, `lease_until`, `lease_live`, `expires_at`, `expired`, `head`. */
  readonly lease?: Statement
  /** The leased key's steps: rows of `name`, `created_at`, `token`, in the order saved. */
  readonly steps?: Statement
}

/** Counts and sizes, for `idem stats`: each statement one row unless said otherwise. */
export interface StatsStatements {
  /** `total`, `live`, `recent` (created within the window) key records. */
  readonly keys: Statement
  /** Rows of `status` (the stored HTTP status, or `other`) and `n`, for records created within the window. */
  readonly byStatus: Statement
  /** Rows of `day` (YYYY-MM-DD, UTC) and `n`, for records created within the window. */
  readonly byDay: Statement
  /** `bytes` the key table takes; a failure (a size the database cannot tell) reads as unknown. */
  readonly keyBytes: Statement
  /** Rows of `state`, `n`, `expired` of `idem_leases`. */
  readonly leases?: Statement
  /** `bytes` the leased tables take; a failure reads as unknown. */
  readonly leaseBytes?: Statement
  /** `live` and `expired` inbox ids. */
  readonly inbox?: Statement
  /** `pending`, `delivered`, and `oldest` (the age of the oldest pending row, in milliseconds, or null). */
  readonly outbox?: Statement
  /** `total` and `recent` (within the window) dead letters. */
  readonly deadLetters?: Statement
}
