// What the SQL stores' Kysely and Drizzle seams (`fromKysely`, `fromDrizzle`) need of each
// ORM, typed by the part of it used, so that neither is imported; and the one raw query
// idem hands Kysely. Every SQL driver's seams take these (Postgres, MySQL).

/** What `fromKysely` needs of a Kysely `Transaction`: Kysely's own fits, and no import of kysely is needed. */
export interface KyselyExecutor {
  /** Runs one compiled query on the transaction's connection. */
  executeQuery(query: KyselyCompiledQuery): Promise<{ rows: unknown[]; numAffectedRows?: bigint }>
  /** The same connection without the app's plugins, which may rewrite rows (`ParseJSONResultsPlugin` would parse stored outcomes). */
  withoutPlugins?(): KyselyExecutor
}

/**
 * Kysely's public `CompiledQuery` for a raw text, as its `CompiledQuery.raw(sql,
 * parameters)` builds one: the text goes to the driver as it is, with its values bound.
 */
export interface KyselyCompiledQuery {
  readonly sql: string
  readonly parameters: readonly unknown[]
  readonly query: { readonly kind: 'RawNode'; readonly sqlFragments: readonly string[]; readonly parameters: readonly [] }
  readonly queryId: { readonly queryId: string }
}

/** What `fromDrizzle` needs of drizzle's `sql` tag (`import { sql } from 'drizzle-orm'`). */
export interface DrizzleSql {
  /** SQL text, as it is. */
  raw(text: string): unknown
  /** A bound parameter. */
  param(value: unknown): unknown
  /** One query of text and parameters, in order. */
  join(chunks: unknown[]): unknown
}

let queries = 0

/** A text in the driver's placeholders and its values as Kysely's `CompiledQuery`. */
export function compiledQuery(text: string, values: readonly unknown[]): KyselyCompiledQuery {
  return Object.freeze({
    sql: text,
    parameters: Object.freeze([...values]),
    query: Object.freeze({ kind: 'RawNode' as const, sqlFragments: Object.freeze([text]), parameters: Object.freeze([]) as readonly [] }),
    // Plugins key their per-query state by this object; only its identity and text matter.
    queryId: Object.freeze({ queryId: `idem-${++queries}` }),
  })
}
