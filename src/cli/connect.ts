import { existsSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'
import type { Redis } from 'ioredis'
import type pg from 'pg'
import { IdemError } from '../core/errors/idem-error.js'
import type { StoreOperator } from '../ports/operator.js'
import { postgresOperator } from '../stores/postgres/index.js'
import { redisOperator } from '../stores/redis/index.js'
import { sqliteOperator } from '../stores/sqlite/index.js'
import type { PostgresConnection } from './connection-strings.js'
import { masked, reason } from './credentials.js'
import { CliError } from './io.js'
import type { KeyLayout, Target } from './target.js'

/** Loads an optional peer dependency, or says which one to install. */
async function driver<T>(name: string, what: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (error) {
    const code = (error as { code?: string }).code
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((error as Error).message).includes(name)) {
      throw new CliError(`the ${what} driver "${name}" is not installed`, `npm i ${name}`, { cause: error })
    }
    throw error
  }
}

/** pg's parser of connection strings, `pg-connection-string`: a dependency of pg's, reached through pg so that it is the copy pg reads with. */
type PgParse = (connectionString: string) => Record<string, unknown>

const loadPg = () =>
  driver('pg', 'Postgres', async () => {
    const { Pool } = (await import('pg')).default
    const { parse }: { parse: PgParse } = createRequire(import.meta.resolve('pg'))('pg-connection-string')
    return { Pool, parse }
  })
const loadSqlite = () => driver('better-sqlite3', 'SQLite', async () => (await import('better-sqlite3')).default)
// ioredis exports the client class by name from 5.2.5; before that only as the default.
const loadRedis = () =>
  driver('ioredis', 'Redis', async () => {
    const ioredis = await import('ioredis')
    return ioredis.Redis ?? ioredis.default
  })
// mysql2, and the store's operator with it, are loaded only for --mysql.
const loadMysql = () =>
  driver('mysql2', 'MySQL', async () => ({
    createPool: (await import('mysql2/promise')).createPool,
    mysqlOperator: (await import('../stores/mysql/index.js')).mysqlOperator,
  }))
// The SDK and the store's operator, which imports it, are loaded only for --dynamodb.
const loadDynamo = () =>
  driver('@aws-sdk/client-dynamodb', 'DynamoDB', async () => ({
    DynamoDBClient: (await import('@aws-sdk/client-dynamodb')).DynamoDBClient,
    dynamodbOperator: (await import('../stores/dynamodb/index.js')).dynamodbOperator,
  }))

type Pool = pg.Pool
type Database = BetterSqlite3.Database

/**
 * What pg is given for the connection: a URL as it is; keyword/value pairs as the same
 * query parameters of a URL, read by pg's own parser (so each keyword means what it
 * means to pg: `sslmode`, `sslkey`, `application_name`…), with `dbname` the database.
 */
function pgConnection(connection: PostgresConnection, parse: PgParse): Record<string, unknown> {
  if (connection.form === 'url') return { connectionString: connection.url }
  const query = new URLSearchParams()
  let database: string | undefined
  for (const { keyword, value } of connection.pairs) {
    if (keyword === 'dbname') database = value
    else query.set(keyword, value)
  }
  return { ...parse(`postgres://?${query}`), database }
}

/** Opens a small pool on the target, runs `work`, and ends the pool. */
export async function withPostgres<T>(target: Extract<Target, { kind: 'postgres' }>, work: (pool: Pool) => Promise<T>): Promise<T> {
  const { Pool, parse } = await loadPg()
  let pool: Pool | undefined
  try {
    pool = new Pool({ ...pgConnection(target.connection, parse), max: 2, connectionTimeoutMillis: 10_000 })
    // An idle client's connection dying must not end the command with an unhandled 'error'.
    pool.on('error', () => {})
    // pg parses a URL here, and throws at once where it cannot (an sslkey file that is not there).
    await pool.query('SELECT 1')
  } catch (error) {
    await pool?.end()
    throw connectionError('Postgres', target.given, error)
  }
  try {
    return await work(pool)
  } finally {
    await pool.end()
  }
}

/**
 * Opens the SQLite file, runs `work`, and closes it. Only `create` (migrate) may make a
 * new file, and a new file that `work` failed on is removed again: a typo must leave
 * no empty database behind.
 */
export async function withSqlite<T>(
  target: Extract<Target, { kind: 'sqlite' }>,
  { create = false, readonly = false, dryRun = false }: { create?: boolean; readonly?: boolean; dryRun?: boolean },
  work: (db: Database) => Promise<T>,
): Promise<T> {
  const Sqlite = await loadSqlite()
  const existed = existsSync(target.file)
  if (existed && statSync(target.file).isDirectory()) throw new CliError(`--sqlite ${target.file} is a directory`, 'pass the path of a database file')
  if (!existed && dryRun) {
    // What a dry run would apply to a new file: everything. Nothing is created.
    const empty = new Sqlite(':memory:')
    try {
      return await work(empty)
    } finally {
      empty.close()
    }
  }
  if (!existed && !create) {
    throw new CliError(`no SQLite database at ${target.file}`, `check the path; to create it with idem's tables, run: idem migrate --sqlite ${target.file}`)
  }
  let db: Database
  try {
    db = new Sqlite(target.file, { fileMustExist: !create, readonly })
  } catch (error) {
    throw new CliError(`cannot open ${target.file}: ${(error as Error).message}`, 'check the path and its permissions', { cause: error })
  }
  let failed = false
  try {
    if (!existed) db.pragma('journal_mode = WAL')
    return await work(db)
  } catch (error) {
    failed = true
    throw error
  } finally {
    db.close()
    if (failed && !existed) for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${target.file}${suffix}`, { force: true })
  }
}

/** Connects to Redis (no retries: a command should fail at once and say why), runs `work`, and quits. */
export async function withRedis<T>(target: Extract<Target, { kind: 'redis' }>, work: (client: Redis) => Promise<T>): Promise<T> {
  const RedisClient = await loadRedis()
  const client = new RedisClient(target.url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 5_000, enableOfflineQueue: false, retryStrategy: () => null })
  // ioredis rejects connect() with "Connection is closed"; the socket's own error says why.
  let cause: unknown
  client.on('error', (error: unknown) => (cause ??= error))
  try {
    await client.connect().catch((error: unknown) => {
      throw connectionError('Redis', target.url, cause ?? error)
    })
    return await work(client)
  } finally {
    client.disconnect()
  }
}

/** How a command reaches its target: read-only, or allowed to create a new SQLite file; a dry run reads a missing file as an empty database. */
export interface Access {
  readonly?: boolean
  create?: boolean
  dryRun?: boolean
  /** Postgres only (`keyLayoutOf` refuses it elsewhere): the key table's layout. */
  keyLayout?: KeyLayout
}

/**
 * Connects to the target, runs `work` with the store's operator, and disconnects: the
 * one place that knows which operator each backend has. Commands ask the operator what
 * it can do (`stats`, `prune`, `migrations`), never which backend it is.
 */
export async function withOperator<T>(target: Target, access: Access, work: (operator: StoreOperator) => Promise<T>): Promise<T> {
  switch (target.kind) {
    case 'postgres':
      return withPostgres(target, (pool) => work(postgresOperator({ pool, schema: target.schema, ...(access.keyLayout === undefined ? {} : { keyLayout: access.keyLayout }) })))
    case 'sqlite':
      return withSqlite(target, access, (db) => work(sqliteOperator({ db })))
    case 'mysql':
      return withMysql(target, work)
    case 'redis':
      return withRedis(target, (client) => work(redisOperator({ client, prefix: target.prefix })))
    case 'dynamodb':
      return withDynamo(target, work)
  }
}

/** Opens a small pool on the target's database, runs `work` with its operator, and ends the pool. */
async function withMysql<T>(target: Extract<Target, { kind: 'mysql' }>, work: (operator: StoreOperator) => Promise<T>): Promise<T> {
  const { createPool, mysqlOperator } = await loadMysql()
  const pool = createPool({ uri: target.url, connectionLimit: 2, connectTimeout: 10_000, charset: 'utf8mb4' })
  try {
    await pool.query('SELECT 1').catch((error: unknown) => {
      throw connectionError('MySQL', target.url, error)
    })
    return await work(mysqlOperator({ pool }))
  } finally {
    await pool.end()
  }
}

/** Makes a DynamoDB client for the target (no retries: a command should fail at once and say why), runs `work` with the operator, and destroys the client. */
async function withDynamo<T>(target: Extract<Target, { kind: 'dynamodb' }>, work: (operator: StoreOperator) => Promise<T>): Promise<T> {
  const { DynamoDBClient, dynamodbOperator } = await loadDynamo()
  const client = new DynamoDBClient({ maxAttempts: 1, ...(target.endpoint === undefined ? {} : { endpoint: target.endpoint }), ...(target.region === undefined ? {} : { region: target.region }) })
  try {
    return await work(dynamodbOperator({ client, table: target.table })).catch((error: unknown) => {
      if (error instanceof IdemError || error instanceof CliError) throw error
      // The SDK's own failures before any request: no region, no credentials, no endpoint.
      throw new CliError(`cannot reach DynamoDB table "${target.table}": ${reason(error, target.endpoint === undefined ? [] : [target.endpoint])}`, 'check --endpoint, --region and the AWS credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION)', { cause: error })
    })
  } finally {
    client.destroy()
  }
}

/** A failure to connect, as cause and fix: the connection string masked, the driver's message without its credentials. */
export function connectionError(what: string, given: string, error: unknown): CliError {
  const code = (error as { code?: string }).code
  const where = /^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? 'the URL' : 'the connection string'
  // Postgres refuses a login with 28P01 or 28000, Redis with a WRONGPASS or NOAUTH reply.
  const refused = code === '28P01' || code === '28000' || code === 'ER_ACCESS_DENIED_ERROR' || (error instanceof Error && /^(WRONGPASS|NOAUTH)\b/.test(error.message))
  const fix = refused
    ? `check the user and password in ${where}`
    : code === '3D000' || code === 'ER_BAD_DB_ERROR'
      ? `check the database name in ${where}, or create it`
      : `check ${where} and that ${what} is running and accepts connections from here`
  const shown = /\s/.test(given) ? JSON.stringify(masked(given)) : masked(given)
  return new CliError(`cannot connect to ${what} at ${shown}: ${reason(error, [given])}`, fix, { cause: error })
}
