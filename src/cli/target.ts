import { existsSync, rmSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import type BetterSqlite3 from 'better-sqlite3'
import { InvalidArgumentError, Option, type Command } from 'commander'
import type { Redis } from 'ioredis'
import type pg from 'pg'
import { IdemError } from '../core/errors/idem-error.js'
import type { StoreOperator } from '../ports/operator.js'
import { postgresOperator } from '../stores/postgres/index.js'
import { redisOperator } from '../stores/redis/index.js'
import { sqliteOperator } from '../stores/sqlite/index.js'
import { CliError } from './io.js'
import { identifier } from './parse.js'

/** Where a command acts. */
export type Target =
  | { kind: 'postgres'; url: string; schema: string }
  | { kind: 'sqlite'; file: string }
  | { kind: 'redis'; url: string; prefix: string }
  | { kind: 'dynamodb'; table: string; endpoint?: string; region?: string }

export type TargetKind = Target['kind']

const FLAG: Record<TargetKind, string> = { postgres: '--postgres <url>', sqlite: '--sqlite <file>', redis: '--redis <url>', dynamodb: '--dynamodb <table>' }

/** Adds the connection flags a command accepts. */
export function withTargetOptions(command: Command, kinds: readonly TargetKind[]): Command {
  if (kinds.includes('postgres')) {
    command.option('--postgres <url>', 'Postgres URL (postgres://user[:password]@host[:port]/database)')
    command.option('--schema <name>', "Postgres schema holding idem's tables", identifier, 'public')
  }
  if (kinds.includes('sqlite')) command.option('--sqlite <file>', 'SQLite database file')
  if (kinds.includes('redis')) {
    command.option('--redis <url>', 'Redis URL (redis://[user:password@]host[:port][/db])')
    command.option('--prefix <prefix>', "prefix of idem's Redis keys", 'idem:')
  }
  if (kinds.includes('dynamodb')) {
    command.option('--dynamodb <table>', "DynamoDB table holding idem's items (credentials and region from the AWS SDK's environment)")
    command.option('--endpoint <url>', 'DynamoDB endpoint, such as http://127.0.0.1:8000 for DynamoDB Local (default: the SDK\'s)', httpUrlOption)
    command.option('--region <region>', 'AWS region of the table (default: the SDK\'s, from AWS_REGION)')
  }
  return command
}

function httpUrlOption(value: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new InvalidArgumentError('Expected an http(s) URL, such as http://127.0.0.1:8000.')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('Expected an http(s) URL, such as http://127.0.0.1:8000.')
  return value
}

/** How the Postgres key table is laid out (`postgresStore`'s `keyLayout`). */
export type KeyLayout = 'table' | 'daily-partitions'

/** Adds `--key-layout`, for the commands that create or prune the key table. */
export function withKeyLayoutOption(command: Command): Command {
  return command.addOption(
    new Option('--key-layout <layout>', "Postgres only: the key table's layout; daily-partitions makes prune drop past days and create days ahead")
      .choices(['table', 'daily-partitions']),
  )
}

/** `postgresStore`'s `keyLayout` option from the flags, refused for a target that has none. */
export function keyLayoutOf(flags: { keyLayout?: KeyLayout }, target: Target): { keyLayout?: KeyLayout } {
  if (flags.keyLayout === undefined) return {}
  if (target.kind !== 'postgres') throw new CliError('--key-layout applies to Postgres only', `drop --key-layout, or pass --postgres <url>`)
  return { keyLayout: flags.keyLayout }
}

/**
 * The one target the flags name, checked before anything connects: a URL that is not
 * one fails here, not as a DNS error about a host it made up.
 * @throws CliError when none or several are given, or a URL is malformed
 */
export function targetOf<K extends TargetKind>(
  flags: TargetFlags,
  kinds: readonly K[],
): Extract<Target, { kind: K }> {
  return checkedTarget(flags, kinds) as Extract<Target, { kind: K }>
}

/** The connection flags of a command. */
export interface TargetFlags {
  postgres?: string
  sqlite?: string
  redis?: string
  dynamodb?: string
  schema?: string
  prefix?: string
  endpoint?: string
  region?: string
}

function checkedTarget(flags: TargetFlags, kinds: readonly TargetKind[]): Target {
  const given = kinds.filter((kind) => flags[kind] !== undefined)
  if (given.length !== 1) {
    const choices = kinds.map((kind) => FLAG[kind]).join(' or ')
    throw new CliError(given.length === 0 ? 'no database given' : `${given.map((k) => `--${k}`).join(' and ')} given together`, `pass exactly one of ${choices}`)
  }
  const kind = given[0]!
  if (kind === 'sqlite') {
    if (flags.sqlite!.trim() === '') throw new CliError('--sqlite needs a file name', 'pass --sqlite path/to/app.db')
    return { kind, file: resolve(flags.sqlite!) }
  }
  if (kind === 'dynamodb') {
    const table = flags.dynamodb!
    if (!/^[A-Za-z0-9_.-]{3,255}$/.test(table)) throw new CliError(`--dynamodb ${JSON.stringify(table)} is not a DynamoDB table name`, 'pass the table of dynamodbStore({ table }): 3–255 of A-Z a-z 0-9 _ . -')
    return { kind, table, ...(flags.endpoint === undefined ? {} : { endpoint: flags.endpoint }), ...(flags.region === undefined ? {} : { region: flags.region }) }
  }
  const value = flags[kind]!
  const protocols = kind === 'postgres' ? ['postgres:', 'postgresql:'] : ['redis:', 'rediss:']
  const example = kind === 'postgres' ? 'postgres://user@127.0.0.1:5432/app' : 'redis://127.0.0.1:6379'
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new CliError(`--${kind} ${JSON.stringify(value)} is not a URL`, `pass a ${kind === 'postgres' ? 'Postgres' : 'Redis'} URL, such as ${example}`)
  }
  if (!protocols.includes(url.protocol)) {
    throw new CliError(`--${kind} ${JSON.stringify(redact(value))} is a ${url.protocol.slice(0, -1)} URL`, `pass a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}, such as ${example}`)
  }
  if (url.hostname === '' && !(kind === 'postgres' && url.searchParams.has('host'))) {
    throw new CliError(`--${kind} ${JSON.stringify(redact(value))} names no host`, `pass a URL with a host, such as ${example}`)
  }
  return kind === 'postgres' ? { kind, url: value, schema: flags.schema ?? 'public' } : { kind, url: value, prefix: flags.prefix ?? 'idem:' }
}

/** A URL without its password, for messages. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.href
  } catch {
    return url
  }
}

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

const loadPg = () => driver('pg', 'Postgres', async () => (await import('pg')).default)
const loadSqlite = () => driver('better-sqlite3', 'SQLite', async () => (await import('better-sqlite3')).default)
// ioredis exports the client class by name from 5.2.5; before that only as the default.
const loadRedis = () =>
  driver('ioredis', 'Redis', async () => {
    const ioredis = await import('ioredis')
    return ioredis.Redis ?? ioredis.default
  })
// The SDK and the store's operator, which imports it, are loaded only for --dynamodb.
const loadDynamo = () =>
  driver('@aws-sdk/client-dynamodb', 'DynamoDB', async () => ({
    DynamoDBClient: (await import('@aws-sdk/client-dynamodb')).DynamoDBClient,
    dynamodbOperator: (await import('../stores/dynamodb/index.js')).dynamodbOperator,
  }))

type Pool = pg.Pool
type Database = BetterSqlite3.Database

/** Opens a small pool on the target, runs `work`, and ends the pool. */
export async function withPostgres<T>(target: Extract<Target, { kind: 'postgres' }>, work: (pool: Pool) => Promise<T>): Promise<T> {
  const pg = await loadPg()
  const pool = new pg.Pool({ connectionString: target.url, max: 2, connectionTimeoutMillis: 10_000 })
  // An idle client's connection dying must not end the command with an unhandled 'error'.
  pool.on('error', () => {})
  try {
    await pool.query('SELECT 1').catch((error: unknown) => {
      throw connectionError('Postgres', target.url, error)
    })
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
    case 'redis':
      return withRedis(target, (client) => work(redisOperator({ client, prefix: target.prefix })))
    case 'dynamodb':
      return withDynamo(target, work)
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
      throw new CliError(`cannot reach DynamoDB table "${target.table}": ${error instanceof Error ? error.message : String(error)}`, 'check --endpoint, --region and the AWS credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION)', { cause: error })
    })
  } finally {
    client.destroy()
  }
}

/** A failure to connect, as cause and fix. */
export function connectionError(what: string, url: string, error: unknown): CliError {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: string }).code
  const fix =
    code === '28P01' || code === '28000'
      ? 'check the user and password in the URL'
      : code === '3D000'
        ? 'check the database name in the URL, or create it'
        : `check the URL and that ${what} is running and accepts connections from here`
  return new CliError(`cannot connect to ${what} at ${redact(url)}: ${message}`, fix, { cause: error })
}

/** An idem error from a store (unavailable, tables missing), as cause and fix. */
export function storeError(error: unknown, target: Target): unknown {
  const where = target.kind === 'postgres' ? `schema "${target.schema}"` : target.kind === 'sqlite' ? target.file : target.kind === 'redis' ? target.url : `DynamoDB table "${target.table}"`
  const missing = (cause: unknown) =>
    target.kind === 'dynamodb'
      ? new CliError(`${where} does not exist`, `create it: await dynamodbStore({ client, table: '${target.table}' }).createTable() (docs/dynamodb.md)`, { cause })
      : new CliError(`idem's tables are missing in ${where}, or older than this idem`, `run: idem migrate ${targetFlags(target)}`, { cause })
  if (error instanceof IdemError) {
    if (error.code === 'migration-required') return missing(error)
    if (error.code === 'store-unavailable') return new CliError(error.message, 'check that the database is running and reachable, then run the command again', { cause: error })
    return error
  }
  if (error instanceof Error && /no such table: idem_|relation "[^"]*idem_\w+" does not exist/.test(error.message)) return missing(error)
  return error
}

/** The flags that name `target`, for a suggested command line. */
export function targetFlags(target: Target): string {
  if (target.kind === 'sqlite') return `--sqlite ${target.file}`
  if (target.kind === 'postgres') return `--postgres ${redact(target.url)}${target.schema === 'public' ? '' : ` --schema ${target.schema}`}`
  if (target.kind === 'dynamodb') return `--dynamodb ${target.table}${target.endpoint === undefined ? '' : ` --endpoint ${target.endpoint}`}${target.region === undefined ? '' : ` --region ${target.region}`}`
  return `--redis ${redact(target.url)}`
}
