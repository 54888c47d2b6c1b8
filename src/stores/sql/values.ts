/**
 * A time as a driver reads it, as a `Date`: Postgres's client gives dates, SQLite keeps
 * epoch milliseconds.
 */
export function toDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(Number(value))
}

/** A time as an ISO string, or null. */
export function toIso(value: unknown): string | null {
  return value === null || value === undefined ? null : toDate(value).toISOString()
}
