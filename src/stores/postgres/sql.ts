/**
 * Every SQL statement the Postgres store runs, as pure functions of the schema name.
 * DBAs can read exactly what runs here (and `idem sql postgres` prints it).
 */

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Validates and quotes a schema name. */
export function quoteSchema(schema: string): string {
  if (!IDENTIFIER.test(schema)) {
    throw new TypeError(`schema must be a plain SQL identifier (letters, digits, _), got ${JSON.stringify(schema)}`)
  }
  return `"${schema}"`
}

export interface Statement {
  text: string
  values: unknown[]
}

/**
 * Takes the key's transaction-scoped advisory lock (waiting up to `waitMs`), then reads
 * the live record, in one round trip. The function is VOLATILE so, under READ
 * COMMITTED, its SELECT takes a new snapshot after the lock wait and sees the
 * holder's commit.
 */
export function claim(schema: string, scope: string, key: string, waitMs: number): Statement {
  return {
    text: `SELECT state, fingerprint, outcome FROM ${quoteSchema(schema)}.idem_claim($1, $2, $3)`,
    values: [scope, key, waitMs],
  }
}

/** Writes (or replaces an expired) record; the caller holds the key's lock. */
export function save(schema: string, scope: string, key: string, fingerprint: string, outcome: string, ttlMs: number): Statement {
  return {
    text:
      `INSERT INTO ${quoteSchema(schema)}.idem_keys (scope, key, fingerprint, outcome, created_at, expires_at) ` +
      `VALUES ($1, $2, $3, $4, now(), now() + $5 * interval '1 millisecond') ` +
      `ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome, ` +
      `created_at = excluded.created_at, expires_at = excluded.expires_at`,
    values: [scope, key, fingerprint, outcome, ttlMs],
  }
}

/** READ COMMITTED is what lets a waiter see the first call's commit (see `claim`). */
export type Isolation = 'read committed' | 'repeatable read' | 'serializable'

export function begin(isolation: Isolation): string {
  return `BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`
}

/**
 * Inlines a statement's values as literals so it can share one simple-protocol round
 * trip with BEGIN or COMMIT. Values are escaped by the driver's own `escapeLiteral`.
 */
export function inline(statement: Statement, escapeLiteral: (value: string) => string): string {
  return statement.text.replace(/\$(\d+)/g, (_, index: string) => {
    const value = statement.values[Number(index) - 1]
    if (typeof value === 'number') {
      if (!Number.isSafeInteger(value)) throw new TypeError(`cannot inline the number ${value}`)
      return String(value)
    }
    return escapeLiteral(String(value))
  })
}

/** Removes expired records, at most `limit` at a time (bounded batches). */
export function prune(schema: string, limit: number): Statement {
  const s = quoteSchema(schema)
  return {
    text:
      `DELETE FROM ${s}.idem_keys WHERE ctid = ANY (ARRAY(` +
      `SELECT ctid FROM ${s}.idem_keys WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED))`,
    values: [limit],
  }
}

/**
 * Records `(kind, subject)` unless it is already there: one row affected means this is
 * the first time. Run in the caller's transaction, so a rollback forgets it; a
 * concurrent transaction inserting the same pair waits for this one to end.
 */
export function onceInsert(schema: string, kind: string, subject: string): Statement {
  return {
    text: `INSERT INTO ${quoteSchema(schema)}.idem_once (kind, subject) VALUES ($1, $2) ON CONFLICT (kind, subject) DO NOTHING`,
    values: [kind, subject],
  }
}
