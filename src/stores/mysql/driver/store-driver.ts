import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'
import type { Connection, JoinUse, Joined, Plan, StoreDriver } from '../../sql/driver.js'
import type { Result, Row, Statement, Step } from '../../sql/statement.js'
import { classifyMysqlError, DEADLOCK, DUPLICATE_KEY, errnoOf } from './errors.js'
import { assertExecutor } from './executors.js'
import { run } from './results.js'
import type { MysqlExecutor, MysqlPool, MysqlPoolConnection } from './types.js'

/**
 * MySQL and MariaDB through `mysql2/promise`, as the SQL stores' protocol runs them
 * (src/stores/sql/driver.ts): a session's statements on a connection held from the pool
 * (the claim takes the key's row lock in the database, so `connect` only checks one
 * out); the caller's transaction through any `MysqlExecutor` (a mysql2 connection,
 * `fromKysely`, `fromDrizzle`); everything else on a pooled connection of its own.
 */
export function mysqlDriver(pool: MysqlPool): StoreDriver<MysqlExecutor> {
  return {
    connect: async () => new HeldConnection(await checkOut(pool), pool),
    async lookup(step) {
      const { rows } = await run(pool, step.statement.text, step.values)
      // The session that hands the pool out never writes through it.
      return { tx: pool, rows }
    },
    join: (tx, use) => new JoinedMysql(tx, use),
    transaction: (statements) => inTransaction(pool, statements),
    query: ({ text, values }) => run(pool, text, values),
    migrate: (plan) => migrate(pool, plan),
  }
}

async function checkOut(pool: MysqlPool): Promise<MysqlPoolConnection> {
  try {
    return await pool.getConnection()
  } catch (error) {
    throw classifyMysqlError(error)
  }
}

// How many times a deadlocked opening round trip is sent (see `HeldConnection.send`).
const OPENING_ATTEMPTS = 10

// How long `abandon` waits for the server to let the connection's thread (and its row locks) go.
const ABANDON_WAIT_MS = 5_000

/**
 * A connection of the store's own, holding one transaction. It listens for the
 * connection's end from checkout to hand-back, so that a connection the server closed
 * under the call's function (killed, restarted, cut) is `lost`: the call then fails
 * with `StoreUnavailableError`, whatever the function's own statement threw.
 */
class HeldConnection implements Connection<MysqlExecutor> {
  readonly tx: MysqlPoolConnection
  lost: StoreUnavailableError | undefined
  #failed = false
  readonly #onLost = (error?: Error): void => {
    this.lost ??= new StoreUnavailableError(`MySQL is unavailable: the connection was lost (${error?.message ?? 'the server closed it'})`, { cause: error })
  }

  constructor(
    connection: MysqlPoolConnection,
    private readonly pool: MysqlPool,
  ) {
    this.tx = connection
    connection.on?.('end', this.#onLost)
    connection.on?.('error', this.#onLost)
  }

  /** Stops listening: from here on the pool is in charge of the connection. */
  #letGo(): void {
    this.tx.removeListener?.('end', this.#onLost)
    this.tx.removeListener?.('error', this.#onLost)
  }

  /**
   * Runs `steps` one after the other. The round trip that opens the transaction (BEGIN
   * and the claim) is run again when InnoDB picks it as a deadlock's victim: concurrent
   * first claims of one new key can deadlock on its row's insert, and InnoDB then rolled
   * back a transaction that held nothing else.
   */
  async send(steps: readonly Step[], where: 'opens' | 'outside' | 'inside'): Promise<Result[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        const results: Result[] = []
        for (const { statement, values } of steps) results.push(await run(this.tx, statement.text, values))
        return results
      } catch (error) {
        if (where === 'opens' && attempt < OPENING_ATTEMPTS && errnoOf((error as { cause?: unknown }).cause) === DEADLOCK) continue
        this.#failed = true
        throw error
      }
    }
  }

  run({ text, values }: Statement): Promise<Result> {
    return this.#run(text, values)
  }

  async #run(text: string, values: readonly unknown[] | undefined): Promise<Result> {
    try {
      return await run(this.tx, text, values)
    } catch (error) {
      this.#failed = true
      throw error
    }
  }

  release(): void {
    this.#letGo()
    this.tx.release()
  }

  async end(cause?: unknown): Promise<void> {
    this.#letGo()
    if (cause === undefined && !this.#failed && this.lost === undefined) {
      try {
        await this.tx.query('ROLLBACK')
        this.tx.release()
        return
      } catch {
        // Destroyed below: a connection that cannot roll back is not reused.
      }
    }
    this.tx.destroy()
  }

  /**
   * Closes the connection under the call's function (every later statement on it
   * fails), and waits until the server has ended its thread, rolling its transaction
   * back and letting the key's row lock go, so that a retry finds the key free.
   */
  async abandon(): Promise<void> {
    const id = this.tx.threadId
    this.#letGo()
    this.tx.destroy()
    if (id === null) return
    const until = Date.now() + ABANDON_WAIT_MS
    try {
      await this.pool.query('KILL ?', [id]).catch(() => undefined)
      while (Date.now() < until) {
        const [rows] = await this.pool.query('SELECT COUNT(*) AS n FROM information_schema.processlist WHERE id = ?', [id])
        if (Number((rows as { n: unknown }[])[0]?.n) === 0) return
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    } catch {
      // The server is out of reach: it ends the thread when it notices the closed socket.
    }
  }
}

const CALLERS: Record<JoinUse, string> = { run: 'run: option "tx"', once: 'once: "tx"', 'outbox.add': 'outbox.add: "tx"' }

/**
 * The caller's transaction: anything with mysql2's `query`, each statement sent as it
 * is. `wroteOne` reads a duplicate key as "not written": the statement alone is rolled
 * back, the caller's transaction goes on (`once`, `outbox.add`).
 */
class JoinedMysql<T> implements Joined<T, Promise<boolean>> {
  readonly #executor: MysqlExecutor

  constructor(
    readonly tx: T,
    use: JoinUse,
  ) {
    assertExecutor(CALLERS[use], tx)
    this.#executor = tx
  }

  async send(steps: readonly Step[]): Promise<Result[]> {
    const results: Result[] = []
    for (const { statement, values } of steps) results.push(await run(this.#executor, statement.text, values))
    return results
  }

  async wroteOne({ text, values }: Statement): Promise<boolean> {
    try {
      return (await run(this.#executor, text, values)).rowCount === 1
    } catch (error) {
      if (errnoOf((error as { cause?: unknown }).cause ?? error) === DUPLICATE_KEY) return false
      throw error
    }
  }
}

/** Whether `value` has mysql2's `query`. */
export function isExecutor(value: unknown): value is MysqlExecutor {
  return value !== null && typeof value === 'object' && typeof (value as Partial<MysqlExecutor>).query === 'function'
}

/** `statements` in one READ COMMITTED transaction on a connection of their own (no gap locks: a dispatcher's or a prune's batch never blocks a claim's insert). */
async function inTransaction(pool: MysqlPool, statements: readonly Statement[]): Promise<Result[]> {
  const connection = await checkOut(pool)
  try {
    await run(connection, 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED')
    await run(connection, 'START TRANSACTION')
    const results: Result[] = []
    for (const { text, values } of statements) results.push(await run(connection, text, values))
    await run(connection, 'COMMIT')
    connection.release()
    return results
  } catch (error) {
    // Closing the connection rolls back whatever it left open.
    connection.destroy()
    throw error
  }
}

/**
 * Runs a migration plan on a connection of its own, which is then closed: the session
 * settings and the named lock the plan took go with it, whether it succeeded or not.
 */
async function migrate<T>(pool: MysqlPool, plan: Plan<T>): Promise<T> {
  const connection = await checkOut(pool)
  try {
    let step = plan.next([])
    while (step.done !== true) step = plan.next((await run(connection, step.value)).rows as Row[])
    return step.value
  } finally {
    connection.destroy()
  }
}
