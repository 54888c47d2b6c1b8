import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'
import type { Connection, KeyLock } from '../../sql/driver.js'
import type { Result, Statement, Step } from '../../sql/statement.js'
import { cancelStatement } from './cancel.js'
import { classifyPgError } from './errors.js'
import type { PgPool, PgPoolClient, PgQueryResult } from './types.js'
import { wireFor, type Wire } from './wire.js'

/**
 * A client idem has taken from the pool, for exactly as long as it holds it. Every
 * place the Postgres stores check a client out goes through `checkOut`.
 *
 * pg-pool listens for a client's 'error' only while the client sits idle in the pool,
 * and pg emits one whenever the connection dies under a checked-out client (a FATAL
 * from the server between statements, a socket error, an unexpected end), whether or
 * not a statement is running. An 'error' nobody listens to ends the Node process, so
 * one dead connection (`pg_terminate_backend`, `idle_in_transaction_session_timeout`,
 * a failover, a network cut) would take every in-flight request with it. The held
 * client listens from checkout to release instead, and keeps what it heard.
 *
 * It is the protocol's `Connection` (src/stores/sql/driver.ts): the round trips of a
 * session's statements go through its wire (wire.ts).
 */
export interface HeldClient extends Connection<PgPoolClient> {
  /** The pg client itself: the transaction the caller's function writes through. */
  readonly client: PgPoolClient
  /** Why the connection was lost while held, as the error the call fails with; undefined while it is alive. */
  readonly lost: StoreUnavailableError | undefined
  /**
   * Runs one text on the client (resolving as `client.query` does). Once the connection
   * is lost it rejects with `lost` without sending anything, and a statement the loss
   * interrupted rejects with `lost` too; other errors are pg's own, for the caller to
   * classify.
   */
  query(text: string, values?: unknown[]): Promise<PgQueryResult>
  /** Runs `send` on the client, as `query` runs a text: refused once the connection is lost, and failing with `lost` when the loss interrupts it. */
  through<T>(send: () => PromiseLike<T>): Promise<T>
  /**
   * Returns the client to the pool, or has the pool destroy it when the connection was
   * lost or `error` is given. Stops listening first: from here on the pool's own idle
   * listener (and the user's `pool.on('error')`) is in charge of the client.
   */
  release(error?: unknown): void
  /**
   * Sends `steps` in one round trip (wire.ts), failing with idem's typed errors as
   * `classifyPgError` maps pg's.
   */
  send(steps: readonly Step[], where: 'opens' | 'outside' | 'inside'): Promise<Result[]>
  /**
   * Ends a transaction the store opened and returns the client to the pool; a client
   * whose connection failed is destroyed rather than reused, and a lost one is not even
   * asked. Never throws.
   */
  end(cause?: unknown): Promise<void>
  /**
   * Ends the connection now, whatever runs on it, and has the pool destroy the client: a
   * statement still running is cancelled (`cancelStatement`), the server rolls the
   * transaction back as the connection ends, and every later query on `client` fails
   * ("Client was closed"), so nothing the caller's function sends afterwards lands
   * anywhere. Resolves once the connection has closed, or after `ABANDON_WAIT_MS`;
   * never throws.
   */
  abandon(): Promise<void>
}

/**
 * How long `abandon` waits for the connection to close: a live server ends it in
 * milliseconds, and one that does not answer in a second would not answer the retry's
 * claim either.
 */
export const ABANDON_WAIT_MS = 1_000

/**
 * Takes a client from `pool` and listens for its connection dying until it is released.
 * Costs one listener added and removed, no round trip.
 *
 * The listener goes on inside `pool.connect`'s callback, in the pool's own call stack.
 * pg-pool stops listening as it hands a client over, and a promise resolves a tick
 * later: a backend ended the moment its connection was made (its ReadyForQuery and its
 * FATAL in one read of the socket, as `pg_terminate_backend` can time it) would emit
 * 'error' in between, with nobody listening, and end the process. A pool wrapper whose
 * `connect` declares no parameter is held from when its promise resolves.
 * @param wire how `send` reaches Postgres: by default, statements parsed anew each time
 * @throws StoreUnavailableError / MigrationRequiredError as `classifyPgError` maps the pool's error
 */
export function checkOut(pool: PgPool, schema: string, wire: Wire = UNPREPARED): Promise<HeldClient> {
  return new Promise<HeldClient>((resolve, reject) => {
    const take = (client: PgPoolClient): void => resolve(new Held(client, schema, wire))
    const fail = (error: unknown): void => reject(classifyPgError(error, schema))
    try {
      // A wrapper that takes no callback (`async () => …`) hands the client over by promise.
      if (pool.connect.length === 0) pool.connect().then(take, fail)
      else
        pool.connect((error, client) => {
          if (error) fail(error)
          else if (client === undefined) fail(new Error('idem: the pool handed over no client'))
          else take(client)
        })
    } catch (error) {
      fail(error)
    }
  })
}

const UNPREPARED = wireFor(false)

/**
 * The driver's `connect` (src/stores/sql/driver.ts) on `pool`: a client checked out,
 * its session's statements sent through `wire`. The key's lock is the claim
 * statement's to take, in Postgres.
 */
export function connector(pool: PgPool, schema: string, wire: Wire): (lock: KeyLock) => Promise<HeldClient> {
  return () => checkOut(pool, schema, wire)
}

// A class rather than an object of closures: one is built for every call, and its methods
// are then not (measured: 1.4 µs less per queue message, in a quiet loop on a fake pool).
class Held implements HeldClient {
  readonly client: PgPoolClient
  readonly #schema: string
  readonly #wire: Wire
  #lost: StoreUnavailableError | undefined
  // pg can report one death twice (the server's FATAL, then the end of the socket): the first says why.
  readonly #onError = (error: Error): void => {
    this.#lost ??= lostConnection(error, this.#schema)
  }

  constructor(client: PgPoolClient, schema: string, wire: Wire) {
    this.client = client
    this.#schema = schema
    this.#wire = wire
    client.on?.('error', this.#onError)
  }

  get tx(): PgPoolClient {
    return this.client
  }

  get lost(): StoreUnavailableError | undefined {
    return this.#lost
  }

  async send(steps: readonly Step[], where: 'opens' | 'outside' | 'inside'): Promise<Result[]> {
    try {
      return await this.#wire.send(this, steps, where)
    } catch (error) {
      throw classifyPgError(error, this.#schema)
    }
  }

  async run({ text, values }: Statement): Promise<Result> {
    try {
      return await this.query(text, values)
    } catch (error) {
      throw classifyPgError(error, this.#schema)
    }
  }

  async end(cause?: unknown): Promise<void> {
    if (this.#lost !== undefined) return this.release()
    try {
      await this.query('ROLLBACK')
      this.release()
    } catch (error) {
      this.release(error instanceof Error ? error : new Error(String(cause ?? error)))
    }
  }

  async query(text: string, values?: unknown[]): Promise<PgQueryResult> {
    if (this.#lost !== undefined) throw this.#lost
    try {
      return await (values === undefined ? this.client.query(text) : this.client.query(text, values))
    } catch (error) {
      throw this.#lost ?? error
    }
  }

  async through<T>(send: () => Promise<T>): Promise<T> {
    if (this.#lost !== undefined) throw this.#lost
    try {
      return await send()
    } catch (error) {
      throw this.#lost ?? error
    }
  }

  release(error?: unknown): void {
    this.client.removeListener?.('error', this.#onError)
    this.client.release(this.#lost ?? (error === undefined ? undefined : error instanceof Error ? error : true))
  }

  async abandon(): Promise<void> {
    const { client } = this
    client.removeListener?.('error', this.#onError)
    if (this.#lost !== undefined) return client.release(this.#lost)
    const closed = new Promise<void>((resolve) => (client.once === undefined ? resolve() : client.once('end', resolve)))
    const cancelled = cancelStatement(client, ABANDON_WAIT_MS)
    // The pool ends a client released with an error (a running statement's socket is
    // destroyed at once) and opens a new connection for its next caller.
    client.release(new Error('idem: the call holding this connection overran its deadline'))
    let timer: NodeJS.Timeout | undefined
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, ABANDON_WAIT_MS)))
    await Promise.race([Promise.all([closed, cancelled]), waited])
    clearTimeout(timer)
  }
}

/** A dead connection is an unavailable store, whatever pg called it (a protocol error, say). */
function lostConnection(error: unknown, schema: string): StoreUnavailableError {
  const classified = classifyPgError(error, schema)
  if (classified instanceof StoreUnavailableError) return classified
  const message = error instanceof Error ? error.message : String(error)
  return new StoreUnavailableError(`Postgres is unavailable: the connection was lost (${message})`, { cause: error })
}
