/**
 * What every statement of the Postgres store is made of beyond the protocol's
 * `Statement` and `NamedStatement` (src/stores/sql/statement.ts): `$n` placeholders, the
 * schema name quoted once, and the inlining for the few texts that still share one
 * simple-protocol round trip. The statements themselves are pure functions of the
 * schema, one file per table family beside this one; DBAs can read exactly what runs
 * there (and `idem sql postgres` prints the tables).
 */

import { named, type NamedStatement, type Statement } from '../../sql/statement.js'

export { named, type NamedStatement, type Statement }

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Validates and quotes a schema name. */
export function quoteSchema(schema: string): string {
  if (!IDENTIFIER.test(schema)) {
    throw new TypeError(`schema must be a plain SQL identifier (letters, digits, _), got ${JSON.stringify(schema)}`)
  }
  return `"${schema}"`
}

/** Quotes `text` as a SQL string literal, as node-postgres' `escapeLiteral` does (in linear time: its own loop took 200 ms for 1 MiB). */
export function quoteLiteral(text: string): string {
  const quoted = `'${text.replaceAll("'", "''")}'`
  return text.includes('\\') ? ` E${quoted.replaceAll('\\', '\\\\')}` : quoted
}

/** READ COMMITTED is what lets a waiter see the first call's commit (see `claim`). */
export type Isolation = 'read committed' | 'repeatable read' | 'serializable'

export function begin(isolation: Isolation): NamedStatement {
  return named('begin', `BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`)
}

/** COMMIT, prepared like the store's other statements so it can share their round trip. */
export const COMMIT: NamedStatement = named('commit', 'COMMIT')

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

