/**
 * What every statement of the Postgres store is made of: a text with `$n` placeholders
 * and its values, the schema name quoted once, the prepared forms, and the inlining
 * that lets several statements share one simple-protocol round trip. The statements
 * themselves are pure functions of the schema, one file per table family beside this
 * one; DBAs can read exactly what runs there (and `idem sql postgres` prints the tables).
 */

import { createHash } from 'node:crypto'

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
 * A statement the store prepares once per connection (SQL `PREPARE`) and then runs with
 * `EXECUTE`, so Postgres parses, analyses and plans it once per connection instead of
 * once per call (measured: about a tenth of a queue message's cost). `EXECUTE` still
 * travels in the simple protocol, so it keeps sharing a round trip with BEGIN or COMMIT.
 */
export interface PreparedStatement {
  /** Derived from a hash of `prepare`, so another schema or another idem version never collides with it. */
  name: string
  /** The `PREPARE` statement. */
  prepare: string
  /** `EXECUTE name($1, …)`, built once: it is sent on every call. */
  execute: string
}

/** A statement prepared under a name derived from its text (see `PreparedStatement`). */
export function prepared(kind: string, types: readonly string[], text: string): PreparedStatement {
  const body = `(${types.join(', ')}) AS ${text}`
  const name = `idem_${kind}_${createHash('sha256').update(body).digest('hex').slice(0, 16)}`
  return { name, prepare: `PREPARE ${name}${body}`, execute: `EXECUTE ${name}(${types.map((_, i) => `$${i + 1}`).join(', ')})` }
}

/** Runs a prepared statement with these values. */
export function execute(statement: PreparedStatement, values: unknown[]): Statement {
  return { text: statement.execute, values }
}

/** Which of these statements the connection has prepared (read when its own bookkeeping proved wrong). */
export function preparedNames(names: readonly string[]): Statement {
  const list = names.map((_, i) => `$${i + 1}`).join(', ')
  return { text: `SELECT name FROM pg_prepared_statements WHERE name IN (${list})`, values: [...names] }
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
  const parts = templateOf(statement.text)
  let text = parts[0] as string
  for (let i = 1; i < parts.length; i += 2) {
    const value = statement.values[parts[i] as number]
    if (typeof value === 'number') {
      if (!Number.isSafeInteger(value)) throw new TypeError(`cannot inline the number ${value}`)
      text += String(value)
    } else {
      text += escapeLiteral(String(value))
    }
    text += parts[i + 1] as string
  }
  return text
}

// The store inlines a handful of texts (its statements, per schema) on every call:
// each is split at its placeholders once (a regular-expression replace per call cost
// more than the rest of building the round trip).
const templates = new Map<string, (string | number)[]>()

/** A text split at its `$n` placeholders: text, value index (from 0), text, …, text. */
export function templateOf(text: string): readonly (string | number)[] {
  let parts = templates.get(text)
  if (parts === undefined) {
    parts = text.split(/\$(\d+)/).map((part, i) => (i % 2 === 1 ? Number(part) - 1 : part))
    if (templates.size >= 1_000) templates.clear()
    templates.set(text, parts)
  }
  return parts
}

