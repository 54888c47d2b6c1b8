import { InvalidOptionError } from '../core/errors/invalid-option.js'

// Plain identifiers only (what Postgres accepts unquoted, up to its 63-byte limit), so
// a table or column name can never carry SQL, whatever the caller passes.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/**
 * Validates a table, column or schema name and returns it double-quoted, ready for SQL
 * text in Postgres and SQLite alike.
 * @param option the option name, for the error message (`reconcile: option "table"`)
 * @throws InvalidOptionError when the name is not a plain identifier
 */
export function quoteIdentifier(name: unknown, option: string): string {
  if (typeof name !== 'string' || !IDENTIFIER.test(name)) {
    throw new InvalidOptionError(
      `${option} must be a plain SQL identifier (letters, digits and _, not starting with a digit, at most 63), got ${JSON.stringify(name)}`,
    )
  }
  return `"${name}"`
}

/** `"schema"."table"`, or `"table"` when no schema is given (the connection's search path decides). */
export function quoteTable(table: unknown, schema: unknown, caller: string): string {
  const t = quoteIdentifier(table, `${caller}: option "table"`)
  return schema === undefined ? t : `${quoteIdentifier(schema, `${caller}: option "schema"`)}.${t}`
}

/** Validates a non-empty list of distinct column names and returns them quoted. */
export function quoteColumns(columns: unknown, option: string, { allowEmpty = false } = {}): string[] {
  if (!Array.isArray(columns) || (!allowEmpty && columns.length === 0)) {
    throw new InvalidOptionError(`${option} must be ${allowEmpty ? 'an' : 'a non-empty'} array of column names`)
  }
  const seen = new Set<string>()
  return columns.map((column: unknown) => {
    const quoted = quoteIdentifier(column, option)
    if (seen.has(quoted)) throw new InvalidOptionError(`${option} names the column ${quoted} twice`)
    seen.add(quoted)
    return quoted
  })
}
