import type { HeldClient } from './held-client.js'
import * as sql from './sql/index.js'
import type { PgPoolClient, PgQueryResult } from './types.js'

/**
 * How the transactional stores talk to Postgres: several statements per round trip in
 * the simple protocol (BEGIN with the claim, the record with COMMIT), each of the
 * store's own statements prepared once per connection and then run with `EXECUTE`, and
 * a fallback to plain statements whenever a connection turns out not to have them.
 */
export interface Wire {
  /**
   * One of the store's statements, after `opening` (BEGIN, or nothing) in the same round
   * trip: `EXECUTE` of its prepared form with the plain statement's values (statements
   * this connection lacks are prepared in the same round trip), or the plain statement
   * itself when prepared statements are off or the connection lost them.
   * @returns the statement's result, and whether the connection has the statements now
   */
  send(client: HeldClient, opening: string, statement: sql.PreparedStatement, plain: sql.Statement): Promise<{ result: PgQueryResult; prepared: boolean }>
}

/** The wire for one store's statements (`ours`), prepared or not. */
export function wireFor(preparedStatements: boolean, ours: readonly sql.PreparedStatement[]): Wire {
  return { send }

  async function send(
    client: HeldClient,
    opening: string,
    statement: sql.PreparedStatement,
    plain: sql.Statement,
  ): Promise<{ result: PgQueryResult; prepared: boolean }> {
    const open = opening === '' ? '' : `${opening}; `
    if (!preparedStatements) return { result: lastResult(await client.query(`${open}${inlined(client, plain)}`)), prepared: false }
    const ready = connections.get(client.client)
    const missing = ours.every((s) => ready.has(s.name)) ? '' : ours.filter((s) => !ready.has(s.name)).map((s) => `${s.prepare}; `).join('')
    try {
      const result = lastResult(await client.query(`${open}${missing}${inlined(client, sql.execute(statement, plain.values))}`))
      if (missing !== '') for (const s of ours) ready.add(s.name)
      return { result, prepared: true }
    } catch (error) {
      if (!isPreparedMismatch(error)) throw error
      // The connection's statements are not what this store recorded (a pooler moved the
      // session, DISCARD ALL, another copy of idem on the pool): read what it has, and
      // run this call with plain statements. Only an explicit BEGIN leaves a failed
      // transaction to roll back.
      const names = inlined(client, sql.preparedNames(ours.map((s) => s.name)))
      const results = (await client.query(`${open === '' ? '' : 'ROLLBACK; '}${open}${inlined(client, plain)}; ${names}`)) as unknown as PgQueryResult[]
      const present = (results[results.length - 1]!.rows as { name: string }[]).map((row) => row.name)
      connections.reset(client.client, ours, present)
      return { result: results[results.length - 2]!, prepared: false }
    }
  }
}

/** A statement with its values inlined as the client escapes them, for the simple protocol (which carries several statements in one round trip). */
export function inlined(client: HeldClient, statement: sql.Statement): string {
  return sql.inline(statement, (v) => client.client.escapeLiteral(v))
}

/** The result of the last statement of a text (pg gives an array only for several statements). */
export function lastResult(results: unknown): PgQueryResult {
  if (!Array.isArray(results)) return results as PgQueryResult
  return results[results.length - 1] as PgQueryResult
}

// A prepared statement that is missing (26000) or already there (42P05).
function isPreparedMismatch(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '26000' || code === '42P05'
}

/**
 * Which of the store's statements each server connection has prepared. A connection is
 * known by its backend process id (stable through wrappers around the client), else by
 * the client object. Being wrong costs one round trip (see `begin`), so the record is
 * simply dropped when it grows past any plausible pool.
 */
class PreparedOn {
  readonly #names = new Map<unknown, Set<string>>()
  get(client: PgPoolClient): Set<string> {
    const id = connectionId(client)
    let names = this.#names.get(id)
    if (names === undefined) {
      if (this.#names.size >= 10_000) this.#names.clear()
      this.#names.set(id, (names = new Set()))
    }
    return names
  }
  /**
   * Corrects what is known of `checked` (one store's statements) to `present`, leaving
   * other stores' statements on the connection as they were: dropping them too would
   * have two stores on one pool correct each other on every call.
   */
  reset(client: PgPoolClient, checked: readonly sql.PreparedStatement[], present: readonly string[]): void {
    const names = this.get(client)
    for (const statement of checked) names.delete(statement.name)
    for (const name of present) names.add(name)
  }
}

// Shared by every store in the process: stores on one pool and schema prepare the same names.
const connections = new PreparedOn()

function connectionId(client: PgPoolClient): unknown {
  const pid = (client as { processID?: unknown }).processID
  return typeof pid === 'number' ? pid : client
}
