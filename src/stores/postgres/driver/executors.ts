/**
 * The one SQL seam of a joined call: whatever transaction the app opened (a pg client,
 * a Kysely or a Drizzle transaction) becomes a `PgClient`, the `tx` that `idem.run`,
 * `outbox.add` and `once` write through. idem's statements reach the database as they
 * are (a `$n` text and its values) through the ORM's own connection, so they are part
 * of its transaction. Neither ORM is imported: each is typed by the part of it used here.
 */

import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { shown } from '../../../core/errors/option-checks.js'
import { templateOf } from '../dialect/statement.js'
import { compiledQuery, type DrizzleSql, type KyselyExecutor } from '../../sql/orm-seams.js'
import type { PgClient, PgExecutor } from './types.js'

/**
 * Checks that `client` is a pg client (`pg.Client`, or a pool's client from
 * `await pool.connect()`) and returns it as it is, to pass as `tx` once you have
 * opened a transaction on it. A pool, an ORM's transaction or anything else is refused
 * with what to pass instead.
 *
 * @throws InvalidOptionError naming what `client` is and what to pass
 * @example
 * const client = await pool.connect()
 * await client.query('BEGIN')
 * await idem.run({ scope, key, input, tx: fromPg(client) }, async (tx) => {
 *   await tx.query('INSERT INTO orders (id) VALUES ($1)', [id])
 * })
 * await client.query('COMMIT')
 * client.release()
 */
export function fromPg<C extends PgClient>(client: C): C {
  const kind = kindOf(client)
  if (kind === 'pg client') return client
  throw new InvalidOptionError(`fromPg: "client" must be a pg client in an open transaction (await pool.connect(), then BEGIN), got ${described(client, kind)}`)
}

/**
 * A Kysely transaction as the `tx` of a call (`idem.run`, `outbox.add`, `once`): idem's
 * statements run on the transaction's connection through `trx.executeQuery`, so the key,
 * the outbox row or the mark commits or rolls back with what you write through `trx`.
 * Your plugins are left out of idem's statements. A `Kysely` instance is accepted too,
 * but outside a transaction each statement commits by itself: join a transaction.
 *
 * @throws InvalidOptionError when `trx` has no `executeQuery`, naming what it is
 * @example
 * await db.transaction().execute(async (trx) => {
 *   await idem.run({ scope, key, input, tx: fromKysely(trx) }, async () => {
 *     return await trx.insertInto('orders').values({ id }).returning('id').executeTakeFirstOrThrow()
 *   })
 * })
 */
export function fromKysely(trx: KyselyExecutor): PgClient {
  const kind = kindOf(trx)
  if (kind !== 'kysely') {
    throw new InvalidOptionError(`fromKysely: "trx" must be a Kysely transaction (db.transaction().execute(async (trx) => …)), got ${described(trx, kind)}`)
  }
  const target = typeof trx.withoutPlugins === 'function' ? trx.withoutPlugins() : trx
  return {
    async query<Row extends object>(text: string, values: unknown[] = []) {
      const { rows, numAffectedRows } = await target.executeQuery(compiledQuery(text, values))
      // Kysely reports a count only for INSERT, UPDATE, DELETE and MERGE. The rows are the
      // driver's: their shape is the one the caller declared (as with pg's own query<Row>).
      return { rows: rows as Row[], rowCount: numAffectedRows === undefined ? null : Number(numAffectedRows) }
    },
    escapeLiteral,
  }
}

/** What `fromDrizzle` needs of a Drizzle node-postgres transaction (or database): `execute`. */
export interface DrizzleExecutor {
  /** Runs one drizzle `sql` query on the transaction's connection. */
  execute(query: unknown): PromiseLike<{ rows: unknown[]; rowCount: number | null }>
}

/**
 * A Drizzle transaction (node-postgres driver, `db.transaction(async (tx) => …)`) as the
 * `tx` of a call (`idem.run`, `outbox.add`, `once`), given drizzle's `sql` tag so that
 * idem does not import drizzle: idem's statements become drizzle SQL with bound
 * parameters and run with `tx.execute`, so they commit or roll back with what you write
 * through `tx`. A database (`drizzle(pool)`) is accepted too, but each statement then
 * commits by itself on whichever connection is free: join a transaction.
 *
 * @throws InvalidOptionError when `tx` has no `execute` or `sql` is not drizzle's tag
 * @example
 * import { sql } from 'drizzle-orm'
 * await db.transaction(async (tx) => {
 *   await idem.run({ scope, key, input, tx: fromDrizzle(tx, sql) }, async () => {
 *     return (await tx.insert(orders).values({ id }).returning())[0]
 *   })
 * })
 */
export function fromDrizzle(tx: DrizzleExecutor, sql: DrizzleSql): PgClient {
  const kind = kindOf(tx)
  if (kind !== 'drizzle') {
    throw new InvalidOptionError(`fromDrizzle: "tx" must be a Drizzle transaction (db.transaction(async (tx) => …)), got ${described(tx, kind)}`)
  }
  if (!isDrizzleSql(sql)) {
    throw new InvalidOptionError(`fromDrizzle: "sql" must be drizzle's sql tag (import { sql } from 'drizzle-orm'), got ${shown(sql)}`)
  }
  return {
    async query<Row extends object>(text: string, values: unknown[] = []) {
      let result: { rows: unknown[]; rowCount: number | null }
      try {
        result = await tx.execute(drizzleQuery(text, values, sql))
      } catch (error) {
        throw driverError(error)
      }
      if (!Array.isArray(result?.rows)) {
        throw new TypeError('fromDrizzle: tx.execute resolved without rows; only the node-postgres driver (drizzle-orm/node-postgres) is supported')
      }
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? null }
    },
    escapeLiteral,
  }
}

/**
 * A `$n` text and its values as drizzle SQL: the text between placeholders raw, each
 * placeholder a bound parameter. Drizzle numbers its parameters in order, so a
 * placeholder used twice binds its value twice.
 *
 * @throws RangeError for a placeholder without a value, or values past the highest
 *   placeholder (Postgres refuses both)
 * @example
 * const query = drizzleQuery('SELECT $1::text AS a, $1::text AS b', ['x'], sql)
 * // new PgDialect().sqlToQuery(query): { sql: 'SELECT $1::text AS a, $2::text AS b', params: ['x', 'x'] }
 */
export function drizzleQuery(text: string, values: readonly unknown[], sql: DrizzleSql): unknown {
  const parts = templateOf(text)
  const chunks: unknown[] = []
  let highest = 0
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!
    if (typeof part === 'string') {
      if (part !== '') chunks.push(sql.raw(part))
      continue
    }
    if (part < 0 || part >= values.length) {
      throw new RangeError(`placeholder $${part + 1} has no value (${values.length} given)`)
    }
    highest = Math.max(highest, part + 1)
    chunks.push(sql.param(values[part]))
  }
  if (highest !== values.length) throw new RangeError(`${values.length} values given, but the text uses $1 to $${highest} only`)
  return sql.join(chunks)
}

/**
 * Quotes `value` as a Postgres string literal exactly as pg's `escapeLiteral` does:
 * quotes doubled, and a value holding a backslash becomes an `E'…'` literal with the
 * backslashes doubled (preceded by a space, as pg writes it). The result means the same
 * with `standard_conforming_strings` on or off.
 * @example
 * escapeLiteral("it's") // "'it''s'"
 * escapeLiteral('a\\b') // " E'a\\\\b'"
 */
export function escapeLiteral(value: string): string {
  let escaped = "'"
  let backslash = false
  for (const c of value) {
    if (c === "'") escaped += "''"
    else if (c === '\\') {
      escaped += '\\\\'
      backslash = true
    } else escaped += c
  }
  escaped += "'"
  return backslash ? ` E${escaped}` : escaped
}

/**
 * Refuses a `tx` idem cannot write through, naming what it is and the wrapper to use:
 * an ORM's transaction passed as it is would otherwise fail deep inside with
 * "tx.query is not a function".
 * @param caller what to name, e.g. `run: option "tx"`
 * @throws InvalidOptionError
 * @example
 * assertExecutor('outbox.add: "tx"', tx)
 */
export function assertExecutor(caller: string, tx: unknown): asserts tx is PgExecutor {
  if (typeof (tx as Partial<PgExecutor> | null)?.query === 'function') return
  const kind = kindOf(tx)
  const hint = kind === 'kysely' ? ': pass fromKysely(trx)' : kind === 'drizzle' ? ': pass fromDrizzle(tx, sql)' : ''
  throw new InvalidOptionError(`${caller} must be a pg client inside an open transaction, or an ORM's through fromKysely or fromDrizzle, got ${described(tx, kind)}${hint}`)
}

type Kind = 'pg client' | 'pg pool' | 'kysely' | 'drizzle' | 'other'

function kindOf(value: unknown): Kind {
  if (value === null || typeof value !== 'object') return 'other'
  const has = (name: string) => typeof (value as Record<string, unknown>)[name] === 'function'
  if (has('executeQuery')) return 'kysely'
  if (has('query') && has('escapeLiteral')) return 'pg client'
  if (has('query') && has('connect')) return 'pg pool'
  if (has('execute')) return 'drizzle'
  return 'other'
}

function described(value: unknown, kind: Kind): string {
  switch (kind) {
    case 'pg client':
      return 'a pg client'
    case 'pg pool':
      return 'a pg pool (it runs each query on whichever connection is free, outside your transaction)'
    case 'kysely':
      return 'a Kysely instance or transaction'
    case 'drizzle':
      return 'a Drizzle database or transaction'
    case 'other':
      return shown(value)
  }
}

function isDrizzleSql(sql: unknown): sql is DrizzleSql {
  return (
    typeof sql === 'function' &&
    'raw' in sql &&
    typeof sql.raw === 'function' &&
    'param' in sql &&
    typeof sql.param === 'function' &&
    'join' in sql &&
    typeof sql.join === 'function'
  )
}

/**
 * The driver's own error, as a pg client's query would reject with: drizzle wraps it
 * (`DrizzleQueryError`), and idem reads the SQLSTATE on it to tell a missing table
 * (MigrationRequiredError) or a lost connection (StoreUnavailableError) apart.
 */
function driverError(error: unknown): unknown {
  const cause = (error as { cause?: unknown } | null)?.cause
  const wrapped = error instanceof Error && 'query' in error && 'params' in error
  return wrapped && cause instanceof Error ? cause : error
}
