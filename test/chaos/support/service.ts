import Database from 'better-sqlite3'
import { fileURLToPath } from 'node:url'
import type pg from 'pg'
import { postgresStore, leasedPostgresStore } from '../../../src/stores/postgres/index.js'
import { sqliteStore } from '../../../src/stores/sqlite/index.js'
import { mysqlStore, type MysqlPool } from '../../../src/stores/mysql/index.js'
import { startFixture, type Fixture } from '../../leased/support.js'

export type Mode = 'postgres' | 'sqlite' | 'mysql' | 'leased-redis' | 'leased-postgres'

export interface ServiceConfig {
  mode: Mode
  boundary?: string
  schema: string
  pgUrl?: string
  pg?: { host: string; port: number; database?: string }
  sqliteFile?: string
  /** The URL of the MySQL database the mysql mode writes to. */
  mysqlUrl?: string
  redisUrl?: string
  prefix?: string
  leaseMs?: number
  waitMs?: number
  applicationName?: string
  ttlMs?: number
}

/** A running `test/fixtures/chaos-server.mjs`. */
export interface Service {
  url: string
  fixture: Fixture
  /** True while the process runs. */
  alive(): boolean
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>
}

// A test that fails half-way leaves no service behind it.
const running = new Set<Fixture>()
process.once('exit', () => {
  for (const fixture of running) fixture.child.kill('SIGKILL')
})

/** Starts the service; `clockOffsetMs` shifts its wall clock (test/fixtures/clock-shift.mjs). */
export async function startService(config: ServiceConfig, { clockOffsetMs = 0 } = {}): Promise<Service> {
  const shift = fileURLToPath(new URL('../../fixtures/clock-shift.mjs', import.meta.url))
  const fixture = startFixture('chaos-server.mjs', config, clockOffsetMs === 0 ? {} : { nodeArgs: ['--import', shift], env: { IDEM_CLOCK_OFFSET_MS: String(clockOffsetMs) } })
  const port = Number(await fixture.line('LISTENING'))
  let ended = false
  running.add(fixture)
  void fixture.exited.then(() => {
    ended = true
    running.delete(fixture)
  })
  return {
    url: `http://127.0.0.1:${port}`,
    fixture,
    alive: () => !ended,
    async stop() {
      if (!ended) fixture.child.kill('SIGTERM')
      await fixture.exited
    },
  }
}

/** The tables the service writes, and idem's, in a schema of the test's own. */
export async function prepareSchema(pool: pg.Pool, schema: string): Promise<void> {
  await postgresStore({ pool, schema }).migrate()
  await leasedPostgresStore({ pool, schema }).migrate()
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".orders (id serial PRIMARY KEY, intent text NOT NULL, amount integer NOT NULL)`)
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".charges (id serial PRIMARY KEY, idempotency_key text UNIQUE NOT NULL, intent text NOT NULL, amount integer NOT NULL)`)
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".charge_calls (idempotency_key text NOT NULL)`)
}

export function prepareSqlite(file: string): Database.Database {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  sqliteStore({ db }).migrate()
  db.exec('CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY AUTOINCREMENT, intent TEXT NOT NULL, amount INTEGER NOT NULL)')
  return db
}

/** One attempt of an intent: POST /orders with its key. Rejects on a network failure. */
export function postOrder(url: string, key: string, intent: string, amount: number, account = 'chaos', holdMs = 0): Promise<Response> {
  return fetch(`${url}/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `"${key}"`, 'x-account': account, 'x-hold-ms': String(holdMs) },
    body: JSON.stringify({ intent, amount }),
    signal: AbortSignal.timeout(20_000),
  })
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The tables the mysql mode writes, and idem's, in a MySQL database of the test's own. */
export async function prepareMysql(pool: MysqlPool & { query(text: string): Promise<unknown> }): Promise<void> {
  await mysqlStore({ pool }).migrate()
  await pool.query('CREATE TABLE IF NOT EXISTS orders (id INT AUTO_INCREMENT PRIMARY KEY, intent VARCHAR(64) NOT NULL, amount INT NOT NULL) ENGINE=InnoDB')
}
