/**
 * What every statement of a SQL store is made of, whatever the database: a text and its
 * values (`Statement`, pg-boss's plans), a text prepared once per connection under a
 * name (`NamedStatement`), and what a driver answers for one (`Result`). Each dialect
 * writes its statements in its own placeholders (`$1` on Postgres, `?` on SQLite).
 */

import { createHash } from 'node:crypto'

/** One statement and the values of its placeholders. */
export interface Statement {
  readonly text: string
  readonly values: unknown[]
}

/**
 * A statement a driver may prepare once per connection under its name and then only
 * bind to its values (Postgres's extended protocol), or cache by its text (SQLite).
 */
export interface NamedStatement {
  /** Derived from a hash of `text`, so another schema or another idem version never collides with it. */
  readonly name: string
  /** The text, in the dialect's placeholders. */
  readonly text: string
}

/** A statement prepared under a name derived from its text (see `NamedStatement`). */
export function named(kind: string, text: string): NamedStatement {
  return { name: `idem_${kind}_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`, text }
}

/** One statement of a round trip, named, and its values. */
export interface Step {
  readonly statement: NamedStatement
  readonly values?: readonly unknown[]
}

/** A row as a driver reads it: column names to values. */
export type Row = Record<string, unknown>

/** What one statement answered: its rows (none for a write without RETURNING) and how many rows it wrote or read. */
export interface Result {
  readonly rows: readonly unknown[]
  readonly rowCount: number | null
}
