import { resolve } from 'node:path'
import { InvalidArgumentError, Option, type Command } from 'commander'
import { IdemError } from '../core/errors/idem-error.js'
import { checkedUrl, postgresConnection, type PostgresConnection } from './connection-strings.js'
import { masked, unquoted } from './credentials.js'
import { CliError } from './io.js'
import { identifier } from './parse.js'

/** Where a command acts; `given` is the connection string as the command line gave it. */
export type Target =
  | { kind: 'postgres'; given: string; connection: PostgresConnection; schema: string }
  | { kind: 'sqlite'; file: string }
  | { kind: 'mysql'; url: string }
  | { kind: 'redis'; url: string; prefix: string }
  | { kind: 'dynamodb'; table: string; endpoint?: string; region?: string }

export type TargetKind = Target['kind']

const FLAG: Record<TargetKind, string> = { postgres: '--postgres <url>', sqlite: '--sqlite <file>', mysql: '--mysql <url>', redis: '--redis <url>', dynamodb: '--dynamodb <table>' }

/** Adds the connection flags a command accepts. */
export function withTargetOptions(command: Command, kinds: readonly TargetKind[]): Command {
  if (kinds.includes('postgres')) {
    command.option('--postgres <url>', "Postgres URL (postgres://user[:password]@host[:port]/database), or libpq's keyword=value pairs in one argument ('host=… port=… user=… dbname=…')")
    command.option('--schema <name>', "Postgres schema holding idem's tables", identifier, 'public')
  }
  if (kinds.includes('sqlite')) command.option('--sqlite <file>', 'SQLite database file')
  if (kinds.includes('mysql')) command.option('--mysql <url>', "MySQL or MariaDB URL (mysql://user[:password]@host[:port]/database): the database holding idem's tables")
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
  mysql?: string
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
  if (kind === 'mysql') return { kind, url: checkedMysqlUrl(flags.mysql!) }
  if (kind === 'postgres') return { kind, given: flags.postgres!, connection: postgresConnection(flags.postgres!), schema: flags.schema ?? 'public' }
  return { kind, url: checkedUrl('redis', flags.redis!), prefix: flags.prefix ?? 'idem:' }
}

/** An idem error from a store (unavailable, tables missing), as cause and fix. */
export function storeError(error: unknown, target: Target): unknown {
  const where = target.kind === 'postgres' ? `schema "${target.schema}"` : target.kind === 'sqlite' ? target.file : target.kind === 'redis' || target.kind === 'mysql' ? masked(target.url) : `DynamoDB table "${target.table}"`
  const missing = (cause: unknown) =>
    target.kind === 'dynamodb'
      ? new CliError(`${where} does not exist`, `create it: await dynamodbStore({ client, table: '${target.table}' }).createTable() (docs/dynamodb.md)`, { cause })
      : new CliError(`idem's tables are missing in ${where}, or older than this idem`, `run: idem migrate ${targetFlags(target)}`, { cause })
  if (error instanceof IdemError) {
    if (error.code === 'migration-required') return missing(error)
    if (error.code === 'store-unavailable') return new CliError(unquoted(error.message, connectionStrings(target)), 'check that the database is running and reachable, then run the command again', { cause: error })
    return error
  }
  if (error instanceof Error && /no such table: idem_|relation "[^"]*idem_\w+" does not exist|Table '[^']*\.idem_\w+' doesn't exist/.test(error.message)) return missing(error)
  return error
}

/** The connection strings of `target`, whose credentials no message may quote. */
function connectionStrings(target: Target): string[] {
  if (target.kind === 'postgres') return [target.given]
  if (target.kind === 'redis' || target.kind === 'mysql') return [target.url]
  return target.kind === 'dynamodb' && target.endpoint !== undefined ? [target.endpoint] : []
}

/** The flags that name `target`, for a suggested command line (and `--json`'s `target`): credentials masked, each value quoted for a shell where it needs it. */
export function targetFlags(target: Target): string {
  if (target.kind === 'sqlite') return `--sqlite ${shellWord(target.file)}`
  if (target.kind === 'mysql') return `--mysql ${shellWord(masked(target.url))}`
  if (target.kind === 'postgres') return `--postgres ${shellWord(masked(target.given))}${target.schema === 'public' ? '' : ` --schema ${target.schema}`}`
  if (target.kind === 'dynamodb') return `--dynamodb ${target.table}${target.endpoint === undefined ? '' : ` --endpoint ${shellWord(masked(target.endpoint))}`}${target.region === undefined ? '' : ` --region ${shellWord(target.region)}`}`
  return `--redis ${shellWord(masked(target.url))}`
}

// `&` in a query, spaces in keyword/value pairs, the mask's `*`: a shell would read them.
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`
}

/** `--mysql`: a `mysql://` URL with a host and the database holding idem's tables. */
function checkedMysqlUrl(text: string): string {
  const url = checkedUrl('mysql', text)
  if (new URL(url).pathname.replace(/^\//, '') === '') {
    throw new CliError(`--mysql ${JSON.stringify(masked(text))} names no database`, "pass the database holding idem's tables, such as mysql://user@127.0.0.1:3306/app")
  }
  return url
}
