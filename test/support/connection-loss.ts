import pg from 'pg'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { afterEach, beforeEach, expect } from 'vitest'
import { PG_URL } from './postgres.js'
import { patience } from './patience.js'

/**
 * Fails each test during which an exception went uncaught. Outside a test runner, the
 * 'error' event nobody listens to (what a connection dying under a held pg client
 * emitted) ends the process; vitest catches it and fails the run as a whole, and this
 * pins it on the test that caused it.
 */
export function failOnUncaughtErrors(): void {
  let uncaught: unknown[] = []
  const record = (error: unknown): void => {
    uncaught.push(error)
  }
  beforeEach(() => {
    uncaught = []
    process.on('uncaughtException', record)
  })
  afterEach(() => {
    process.off('uncaughtException', record)
    expect(uncaught.map((error) => String(error)), 'uncaught exceptions (would have ended the process)').toEqual([])
  })
}

/**
 * Polls `check` every 10 ms until it holds. The limit only bounds a hang (the test then
 * fails naming `what`), and grows with the machine's load (./patience.ts); nothing here
 * measures time.
 */
export async function until(what: string, check: () => boolean | Promise<boolean>, limitMs = 15_000): Promise<void> {
  const deadline = Date.now() + patience(limitMs)
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** The server process behind a client (or behind the transaction a handler was given). */
export async function backendPid(tx: { query(text: string): Promise<{ rows: unknown[] }> }): Promise<number> {
  const { rows } = await tx.query('SELECT pg_backend_pid() AS pid')
  return (rows[0] as { pid: number }).pid
}

/** Resolves once the server process `pid` has exited. */
export function backendGone(admin: pg.Pool, pid: number): Promise<void> {
  return until(`backend ${pid} to exit`, async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0)
}

/** Resolves once a connection named `applicationName` is waiting for a lock, i.e. its statement is running. */
export function waitingOnLock(admin: pg.Pool, applicationName: string): Promise<void> {
  return until(`a statement of ${applicationName} to wait for its lock`, async () => {
    const { rowCount } = await admin.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [applicationName])
    return (rowCount ?? 0) > 0
  })
}

/** Resolves once no connection named `applicationName` is left on the server (the server noticed them cut). */
export function connectionsGone(admin: pg.Pool, applicationName: string): Promise<void> {
  return until(`the server to drop the connections of ${applicationName}`, async () => {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [applicationName])
    return rowCount === 0
  })
}

/**
 * A pool of the store's own, apart from the test's admin pool, whose errors are kept
 * rather than left unheard. `via` points it at a TCP fault proxy instead of Postgres.
 */
export function storePool(
  applicationName: string,
  options: {
    max?: number
    via?: { host: string; port: number }
    idleInTransactionMs?: number
    /** How often the server checks, while a statement runs, that the client is still there (`client_connection_check_interval`). */
    checkClientMs?: number
  } = {},
): pg.Pool & { errors: Error[] } {
  const url = new URL(PG_URL)
  if (options.via !== undefined) {
    url.hostname = options.via.host
    url.port = String(options.via.port)
  }
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max: options.max ?? 4,
    connectionTimeoutMillis: 10_000,
    application_name: applicationName,
    ...(options.idleInTransactionMs === undefined ? {} : { idle_in_transaction_session_timeout: options.idleInTransactionMs }),
    ...(options.checkClientMs === undefined ? {} : { options: `-c client_connection_check_interval=${options.checkClientMs}` }),
  }) as pg.Pool & { errors: Error[] }
  pool.errors = []
  pool.on('error', (error) => pool.errors.push(error))
  return pool
}

/** `host:port` of the test Postgres, for a TCP fault proxy's target. */
export function pgTarget(): string {
  const { host, port } = pgAddress()
  return `${host}:${port}`
}

/** The test server's host and port, as PG_URL names them. */
function pgAddress(): { host: string; port: number } {
  const url = new URL(PG_URL)
  return { host: url.hostname, port: url.port === '' ? 5432 : Number(url.port) }
}

/**
 * A proxy in front of Postgres that ends the backend of its first connection at the
 * moment the connection is handed over: it holds back the server's replies until the
 * startup's ReadyForQuery, has `admin` terminate that backend (its pid is in the
 * BackendKeyData), waits for the server's FATAL and the end of the socket, and then
 * sends all of it to the client in one write. The client's parser so reads "ready" and
 * "terminated" in one go, as it can when `pg_terminate_backend` lands just after a
 * connection is made. Later connections pass untouched.
 */
export async function handoverDeathProxy(admin: pg.Pool): Promise<{ host: string; port: number; terminated: number[]; close(): Promise<void> }> {
  const { host, port } = pgAddress()
  const terminated: number[] = []
  const sockets = new Set<Socket>()
  let first = true
  const server = createServer((client) => {
    const upstream = connect(port, host)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      socket.on('error', () => {})
    }
    client.pipe(upstream)
    if (!first) {
      upstream.pipe(client)
      return
    }
    first = false
    let held = Buffer.alloc(0)
    let pid: number | undefined
    let ready = false
    upstream.on('data', (chunk: Buffer) => {
      held = Buffer.concat([held, chunk])
      if (ready) return
      // Messages: a type byte, then a length (itself included).
      for (let at = 0; at + 5 <= held.length && at + 1 + held.readInt32BE(at + 1) <= held.length; at += 1 + held.readInt32BE(at + 1)) {
        const type = String.fromCharCode(held[at]!)
        if (type === 'K') pid = held.readInt32BE(at + 5)
        if (type === 'Z' && pid !== undefined) {
          ready = true
          terminated.push(pid)
          void admin.query('SELECT pg_terminate_backend($1)', [pid])
          break
        }
      }
    })
    upstream.on('end', () => {
      client.end(held)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    host: '127.0.0.1',
    port: (server.address() as AddressInfo).port,
    terminated,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
