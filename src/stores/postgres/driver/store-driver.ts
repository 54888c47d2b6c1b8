import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'
import type { JoinUse, Joined, Plan, StoreDriver } from '../../sql/driver.js'
import type { Result, Row, Statement, Step } from '../../sql/statement.js'
import { classifyPgError } from './errors.js'
import { assertExecutor } from './executors.js'
import { checkOut, connector } from './held-client.js'
import { queryOnPool } from './pool-query.js'
import type { PgClient, PgExecutor, PgPool } from './types.js'
import { wireFor } from './wire.js'

/**
 * Postgres through `pg`, as the SQL stores' protocol runs it (src/stores/sql/driver.ts):
 * a session's statements pipelined on a client held from the pool (held-client.ts,
 * wire.ts), prepared once per connection unless `preparedStatements` is off; the
 * caller's transaction through any `PgExecutor` (a pg client, `fromKysely`,
 * `fromDrizzle`); everything else a statement on a pooled client of its own.
 */
export function postgresDriver(pool: PgPool, schema: string, preparedStatements = true): StoreDriver<PgClient> {
  const wire = wireFor(preparedStatements)
  return {
    connect: connector(pool, schema, wire),
    async lookup(step) {
      const client = await checkOut(pool, schema, wire)
      try {
        const [result] = await client.send([step], 'outside')
        client.release()
        // The client is back in the pool: the session that hands it out never writes through it.
        return { tx: client.client, rows: result!.rows }
      } catch (error) {
        await client.end(error)
        throw error
      }
    },
    join: (tx, use) => new JoinedPg(tx, use, schema),
    transaction: (statements) => inTransaction(pool, schema, statements),
    query: (statement) => queryOnPool(pool, schema, statement),
    migrate: (plan) => migrate(pool, schema, plan),
  }
}

const CALLERS: Record<JoinUse, string> = { run: 'run: option "tx"', once: 'once: "tx"', 'outbox.add': 'outbox.add: "tx"' }

/** The caller's transaction: anything with pg's `query`, each statement sent as it is. */
class JoinedPg<T> implements Joined<T, Promise<boolean>> {
  readonly #executor: PgExecutor
  readonly #schema: string

  constructor(
    readonly tx: T,
    use: JoinUse,
    schema: string,
  ) {
    assertExecutor(CALLERS[use], tx)
    this.#executor = tx
    this.#schema = schema
  }

  async send(steps: readonly Step[]): Promise<Result[]> {
    const results: Result[] = []
    try {
      for (const { statement, values = [] } of steps) results.push(await this.#executor.query(statement.text, [...values]))
    } catch (error) {
      throw classifyPgError(error, this.#schema)
    }
    return results
  }

  async wroteOne({ text, values }: Statement): Promise<boolean> {
    try {
      return (await this.#executor.query(text, values)).rowCount === 1
    } catch (error) {
      throw classifyPgError(error, this.#schema)
    }
  }
}

/** `statements` on a client of their own: one alone is its own transaction, several are wrapped in one. */
async function inTransaction(pool: PgPool, schema: string, statements: readonly Statement[]): Promise<Result[]> {
  if (statements.length === 1) return [await queryOnPool(pool, schema, statements[0]!)]
  const client = await checkOut(pool, schema)
  try {
    await client.query('BEGIN')
    const results: Result[] = []
    for (const { text, values } of statements) results.push(await client.query(text, values))
    await client.query('COMMIT')
    client.release()
    return results
  } catch (error) {
    await client.end(error)
    throw classifyPgError(error, schema)
  }
}

/**
 * Runs a migration plan on a client of its own, rolling back when a statement fails. A
 * lost connection is an unavailable store (running it again is safe); any other error
 * is Postgres's own, unchanged.
 */
async function migrate<T>(pool: PgPool, schema: string, plan: Plan<T>): Promise<T> {
  const client = await checkOut(pool, schema)
  let failure: unknown
  try {
    let step = plan.next([])
    while (step.done !== true) step = plan.next((await client.query(step.value)).rows as Row[])
    return step.value
  } catch (error) {
    // A connection that cannot even roll back is destroyed rather than returned.
    failure = client.lost ?? (await client.query('ROLLBACK').then(() => undefined, (rollbackError: unknown) => rollbackError))
    const classified = classifyPgError(error, schema)
    throw classified instanceof StoreUnavailableError ? classified : error
  } finally {
    client.release(failure)
  }
}
