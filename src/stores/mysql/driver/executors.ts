/**
 * The one SQL seam of a joined call on MySQL: whatever transaction the app opened (a
 * mysql2 connection, a Kysely or a Drizzle transaction) becomes a `MysqlExecutor`, the
 * `tx` that `idem.run`, `outbox.add` and `once` write through. idem's statements reach
 * the database as they are (a `?` text and its values) through the ORM's own
 * connection, so they are part of its transaction. Neither ORM is imported: each is
 * typed by the part of it used here.
 */

import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { shown } from '../../../core/errors/option-checks.js'
import { compiledQuery, type DrizzleSql, type KyselyExecutor } from '../../sql/orm-seams.js'
import type { MysqlExecutor } from './types.js'

/**
 * A Kysely transaction (`MysqlDialect`, over a mysql2 pool) as the `tx` of a call
 * (`idem.run`, `outbox.add`, `once`): idem's statements run on the transaction's
 * connection through `trx.executeQuery`, so the key, the outbox row or the mark commits
 * or rolls back with what you write through `trx`. Your plugins are left out of idem's
 * statements.
 *
 * @throws InvalidOptionError when `trx` has no `executeQuery`, naming what it is
 * @example
 * await db.transaction().execute(async (trx) => {
 *   await idem.run({ scope, key, input, tx: fromKysely(trx) }, async () => {
 *     await trx.insertInto('orders').values({ id }).execute()
 *   })
 * })
 */
export function fromKysely(trx: KyselyExecutor): MysqlExecutor {
  if (kindOf(trx) !== 'kysely') throw new InvalidOptionError(`fromKysely: "trx" must be a Kysely transaction (db.transaction().execute(async (trx) => …)), got ${described(trx)}`)
  const target = typeof trx.withoutPlugins === 'function' ? trx.withoutPlugins() : trx
  return {
    async query(text, values = []) {
      const { rows, numAffectedRows } = await target.executeQuery(compiledQuery(text, values))
      // Kysely answers a write with its count and no rows, as mysql2 answers it with a header.
      return [numAffectedRows === undefined ? rows : { affectedRows: Number(numAffectedRows) }, undefined]
    },
  }
}

/** What `fromDrizzle` needs of a Drizzle mysql2 transaction (or database): `execute`, answering mysql2's `[rows or header, fields]`. */
export interface DrizzleMysqlExecutor {
  /** Runs one drizzle `sql` query on the transaction's connection. */
  execute(query: unknown): PromiseLike<unknown>
}

/**
 * A Drizzle transaction (mysql2 driver, `db.transaction(async (tx) => …)`) as the `tx`
 * of a call (`idem.run`, `outbox.add`, `once`), given drizzle's `sql` tag so that idem
 * does not import drizzle: idem's statements become drizzle SQL with bound parameters
 * and run with `tx.execute`, so they commit or roll back with what you write through `tx`.
 *
 * @throws InvalidOptionError when `tx` has no `execute` or `sql` is not drizzle's tag
 * @example
 * import { sql } from 'drizzle-orm'
 * await db.transaction(async (tx) => {
 *   await idem.run({ scope, key, input, tx: fromDrizzle(tx, sql) }, async () => {
 *     await tx.insert(orders).values({ id })
 *   })
 * })
 */
export function fromDrizzle(tx: DrizzleMysqlExecutor, sql: DrizzleSql): MysqlExecutor {
  if (kindOf(tx) !== 'drizzle') throw new InvalidOptionError(`fromDrizzle: "tx" must be a Drizzle transaction (db.transaction(async (tx) => …)), got ${described(tx)}`)
  const tag = sql as Partial<DrizzleSql> | null
  if (typeof sql !== 'function' || typeof tag?.raw !== 'function' || typeof tag.param !== 'function' || typeof tag.join !== 'function') {
    throw new InvalidOptionError(`fromDrizzle: "sql" must be drizzle's sql tag (import { sql } from 'drizzle-orm'), got ${shown(sql)}`)
  }
  return {
    async query(text, values = []) {
      try {
        const answer = await tx.execute(drizzleQuery(text, values, sql))
        if (!Array.isArray(answer)) throw new TypeError('fromDrizzle: tx.execute resolved to no [result, fields] pair; only the mysql2 driver (drizzle-orm/mysql2) is supported')
        return [answer[0], answer[1]]
      } catch (error) {
        // Drizzle wraps the driver's error (DrizzleQueryError): idem reads mysql2's errno on it.
        const cause = (error as { cause?: unknown } | null)?.cause
        throw error instanceof Error && 'query' in error && cause instanceof Error ? cause : error
      }
    },
  }
}

/**
 * A `?` text and its values as drizzle SQL: the text between placeholders raw, each
 * placeholder a bound parameter. idem's statements hold no `?` but their placeholders.
 * @throws RangeError when the placeholders and the values do not pair up
 */
export function drizzleQuery(text: string, values: readonly unknown[], sql: DrizzleSql): unknown {
  const parts = text.split('?')
  if (parts.length - 1 !== values.length) throw new RangeError(`${values.length} values given for ${parts.length - 1} placeholders`)
  const chunks: unknown[] = []
  parts.forEach((part, i) => {
    if (i > 0) chunks.push(sql.param(values[i - 1]))
    if (part !== '') chunks.push(sql.raw(part))
  })
  return sql.join(chunks)
}

/**
 * Refuses a `tx` idem cannot write through, naming what it is and what to pass: a pool
 * (each statement on whichever connection is free, outside the caller's transaction),
 * or an ORM's transaction passed as it is.
 * @param caller what to name, e.g. `run: option "tx"`
 * @throws InvalidOptionError
 */
export function assertExecutor(caller: string, tx: unknown): asserts tx is MysqlExecutor {
  const kind = kindOf(tx)
  if (kind === 'connection') return
  const hint = kind === 'kysely' ? ': pass fromKysely(trx)' : kind === 'drizzle' ? ': pass fromDrizzle(tx, sql)' : kind === 'pool' ? ': pass await pool.getConnection(), inside its transaction' : ''
  throw new InvalidOptionError(`${caller} must be a mysql2 connection inside an open transaction, or an ORM's through fromKysely or fromDrizzle, got ${described(tx)}${hint}`)
}

type Kind = 'connection' | 'pool' | 'kysely' | 'drizzle' | 'other'

function kindOf(value: unknown): Kind {
  if (value === null || typeof value !== 'object') return 'other'
  const has = (name: string) => typeof (value as Record<string, unknown>)[name] === 'function'
  if (has('executeQuery')) return 'kysely'
  if (has('query') && has('getConnection')) return 'pool'
  if (has('query')) return 'connection'
  if (has('execute')) return 'drizzle'
  return 'other'
}

function described(value: unknown): string {
  switch (kindOf(value)) {
    case 'connection':
      return 'a mysql2 connection'
    case 'pool':
      return 'a mysql2 pool (it runs each query on whichever connection is free, outside your transaction)'
    case 'kysely':
      return 'a Kysely instance or transaction'
    case 'drizzle':
      return 'a Drizzle database or transaction'
    case 'other':
      return shown(value)
  }
}
