import Database from 'better-sqlite3'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteMigrations } from '../../src/stores/sqlite/dialect/migrations.js'
import { idem, noStack, root } from './support.js'

const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }

describe('idem: help, version and typos', () => {
  it('prints its version and the commands', async () => {
    expect(await idem(['--version'])).toMatchObject({ code: 0, stdout: `${version}\n` })
    const help = await idem(['--help'])
    expect(help.code).toBe(0)
    for (const command of ['migrate', 'sql', 'prune', 'inspect', 'stats', 'reconcile']) expect(help.stdout).toMatch(new RegExp(`^  ${command} `, 'm'))
    const bare = await idem([])
    expect(bare.code).toBe(2)
    expect(bare.stderr).toContain('Usage: idem')
  })

  it.each(['migrate', 'sql', 'prune', 'inspect', 'stats', 'reconcile'])('idem %s --help is its own, with an example', async (command) => {
    const ran = await idem([command, '--help'])
    expect(ran.code).toBe(0)
    expect(ran.stdout).toContain(`Usage: idem ${command}`)
    expect(ran.stdout).toMatch(/Examples?:\n\s+\$ idem /)
    expect(ran.stdout).toContain('--json')
    expect((await idem(['help', command])).stdout).toContain(`Usage: idem ${command}`)
  })

  it('suggests the command or flag meant', async () => {
    const command = await idem(['migrat'])
    expect(command).toMatchObject({ code: 2 })
    expect(command.stderr).toContain("idem: unknown command 'migrat'\n(Did you mean migrate?)")
    const flag = await idem(['prune', '--sqlite', 'x.db', '--batch-sise', '5'])
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain("idem: unknown option '--batch-sise'\n(Did you mean --batch-size?)")
    expect(flag.stderr).toContain('(run idem prune --help for its options and an example)')
  })
})

describe('idem: every mistake names its cause and fix, exits 2, and leaves nothing behind', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-cli-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it.each([
    ['a Postgres "URL" that is not one', ['migrate', '--postgres', 'not-a-url'], 'idem migrate: --postgres "not-a-url" is not a URL\n  fix: pass a Postgres URL, such as postgres://user@127.0.0.1:5432/app'],
    ['a URL of another kind', ['prune', '--postgres', 'mysql://db/app'], 'idem prune: --postgres "mysql://db/app" is a mysql URL\n  fix: pass a URL starting with postgres:// or postgresql://'],
    ['a Redis URL that is not one', ['inspect', 's', 'k', '--redis', 'localhost:6379'], 'idem inspect: --redis "localhost:6379" is a localhost URL'],
    ['an unreachable Postgres', ['migrate', '--postgres', 'postgres://postgres@127.0.0.1:1/x'], 'idem migrate: cannot connect to Postgres at postgres://postgres@127.0.0.1:1/x: connect ECONNREFUSED 127.0.0.1:1\n  fix: check the URL and that Postgres is running'],
    ['an unreachable Redis', ['inspect', 's', 'k', '--redis', 'redis://127.0.0.1:1'], 'idem inspect: cannot connect to Redis at redis://127.0.0.1:1'],
    ['no database', ['stats'], 'idem stats: no database given\n  fix: pass exactly one of --postgres <url> or --sqlite <file>'],
    ['two databases', ['prune', '--sqlite', 'a.db', '--postgres', 'postgres://h/db'], 'idem prune: --postgres and --sqlite given together'],
    ['a bad schema name', ['sql', 'postgres', '--schema', 'bad"name'], `idem: option '--schema <name>' argument 'bad"name' is invalid. Expected a plain SQL identifier`],
    ['a batch size that is not a number', ['prune', '--sqlite', 'x.db', '--batch-size', 'abc'], "idem: option '--batch-size <n>' argument 'abc' is invalid. Expected a whole number from 1 to 1000000."],
    ['a duration that is not one', ['prune', '--sqlite', 'x.db', '--older-than', 'a week'], "idem: option '--older-than <duration>' argument 'a week' is invalid. Expected a duration such as 90s, 15m, 24h or 14d"],
    ['a threshold out of range', ['reconcile', '--sqlite', 'x.db', '--table', 't', '--columns', 'a', '--threshold', '5'], "option '--threshold <rate>' argument '5' is invalid. Expected a rate from 0 to 1"],
    ['a missing required option', ['reconcile', '--sqlite', 'x.db', '--table', 't'], "idem: required option '--columns <a,b,...>' not specified"],
    ['an unknown dialect', ['sql', 'oracle'], "idem: command-argument value 'oracle' is invalid for argument 'dialect'. Allowed choices are postgres, sqlite, mysql."],
    ['a --metrics that is not an http URL', ['stats', '--sqlite', 'x.db', '--metrics', 'ftp://x'], "option '--metrics <url>' argument 'ftp://x' is invalid"],
    ['a baseline newer than this idem', ['migrate', '--sqlite', 'new.db', '--baseline', '99'], 'idem migrate: --baseline 99 is newer than this idem\'s schema (version 4)\n  fix: pass a version from 1 to 4'],
    ['a SQLite file that does not exist', ['prune', '--sqlite', 'typo.db'], 'idem prune: no SQLite database at DIR/typo.db\n  fix: check the path; to create it with idem\'s tables, run: idem migrate --sqlite DIR/typo.db'],
    ['a directory for a file', ['migrate', '--sqlite', '.'], 'idem migrate: --sqlite DIR is a directory'],
    ['a DynamoDB table name that is not one', ['stats', '--dynamodb', 'a/b'], 'idem stats: --dynamodb "a/b" is not a DynamoDB table name'],
    ['an --endpoint that is not an http URL', ['prune', '--dynamodb', 'idem', '--endpoint', '127.0.0.1:8000'], "option '--endpoint <url>' argument '127.0.0.1:8000' is invalid"],
    ['a backend a command does not serve', ['migrate', '--dynamodb', 'idem'], "idem: unknown option '--dynamodb'"],
  ])('%s', async (_, args, message) => {
    const ran = await idem(args, { cwd: dir })
    expect(ran.code).toBe(2)
    expect(ran.stdout).toBe('')
    expect(ran.stderr).toContain(message.replaceAll('DIR', dir))
    expect(ran.stderr).not.toContain('ENOTFOUND')
    expect(ran.stderr).not.toContain('batchSize')
    noStack(ran)
    // Nothing left behind: no empty database made by a typo or a failed migrate.
    for (const file of ['typo.db', 'new.db', 'x.db', 'a.db']) expect(existsSync(join(dir, file)), file).toBe(false)
  })

  it.each([
    ['better-sqlite3', ['prune', '--sqlite', 'x.db'], 'idem prune: the SQLite driver "better-sqlite3" is not installed\n  fix: npm i better-sqlite3'],
    ['pg', ['stats', '--postgres', 'postgres://127.0.0.1/x'], 'idem stats: the Postgres driver "pg" is not installed\n  fix: npm i pg'],
    ['ioredis', ['inspect', 's', 'k', '--redis', 'redis://127.0.0.1'], 'idem inspect: the Redis driver "ioredis" is not installed\n  fix: npm i ioredis'],
    [
      '@aws-sdk/client-dynamodb',
      ['stats', '--dynamodb', 'idem'],
      'idem stats: the DynamoDB driver "@aws-sdk/client-dynamodb" is not installed\n  fix: npm i @aws-sdk/client-dynamodb',
    ],
  ])('without %s installed, says which package to install', async (module, args, message) => {
    const ran = await idem(args, { cwd: dir, node: ['--import', join(root, 'test/cli/fixtures/hide-module.mjs')], env: { IDEM_HIDE_MODULE: module } })
    expect(ran).toMatchObject({ code: 2, stdout: '' })
    expect(ran.stderr).toContain(message)
    noStack(ran)
  })
})

// What `idem migrate` prints before it applies the versions after `from`.
const sqlitePlan = (from: number): string =>
  [`idem: schema at version ${from}; applying, in one transaction:`, ...sqliteMigrations.filter((m) => m.version > from).map((m) => `  version ${m.version}: ${m.description}`), ''].join('\n')

describe('idem migrate and idem sql (SQLite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-cli-sqlite-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('migrates a file once, then reports it is current', async () => {
    const file = join(dir, 'app.db')
    expect((await idem(['migrate', '--sqlite', file])).stdout).toBe(`${sqlitePlan(0)}idem: migrated from version 0 to 4 (applied 1, 2, 3, 4)\n`)
    expect((await idem(['migrate', '--sqlite', file])).stdout).toBe('idem: schema already at version 4\n')
    expect(JSON.parse((await idem(['migrate', '--sqlite', file, '--json'])).stdout)).toMatchObject({ from: 4, to: 4, applied: [], dryRun: false })
  })

  it('--dry-run prints the SQL and applies nothing (and creates no file)', async () => {
    const file = join(dir, 'dry.db')
    const dry = await idem(['migrate', '--sqlite', file, '--dry-run'])
    expect(dry.code).toBe(0)
    expect(dry.stdout).toContain('-- from version 0 to 4; nothing was applied')
    expect(dry.stdout).toContain('CREATE TABLE idem_keys')
    expect(existsSync(file)).toBe(false)
    const json = JSON.parse((await idem(['migrate', '--sqlite', file, '--dry-run', '--json'])).stdout) as { statements: string[] }
    expect(json.statements[0]).toBe('BEGIN IMMEDIATE')
  })

  it('`idem sql sqlite` applied by hand records its version, so a later migrate works', async () => {
    const file = join(dir, 'by-hand.db')
    const script = (await idem(['sql', 'sqlite'])).stdout
    const db = new Database(file)
    db.exec(script)
    db.close()
    expect(await idem(['migrate', '--sqlite', file])).toMatchObject({ code: 0, stdout: 'idem: schema already at version 4\n' })
    // An upgrade script from an older version applies only what is newer.
    const upgrade = await idem(['sql', 'sqlite', '--from', '3'])
    expect(upgrade.stdout).toContain('CREATE TABLE idem_leases')
    expect(upgrade.stdout).not.toContain('CREATE TABLE idem_keys')
  })

  it('tables made by hand without versions: migrate says how to baseline them, and --baseline does', async () => {
    const file = join(dir, 'old-by-hand.db')
    const db = new Database(file)
    for (const migration of sqliteMigrations.slice(0, 2)) for (const statement of migration.up) db.exec(statement)
    db.close()
    const refused = await idem(['migrate', '--sqlite', file])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain("idem migrate: idem's tables exist (idem_keys, idem_once) but no schema version is recorded")
    expect(refused.stderr).toContain(`fix: find the version they are at (compare them with \`idem sql\`), then run: idem migrate --sqlite ${file} --baseline <version>`)
    expect((await idem(['migrate', '--sqlite', file, '--baseline', '2'])).stdout).toBe(`${sqlitePlan(2)}idem: migrated from version 2 to 4 (applied 3, 4)\n`)
  })

  it('names missing tables in a file that is not migrated', async () => {
    const file = join(dir, 'empty.db')
    new Database(file).close()
    const ran = await idem(['stats', '--sqlite', file])
    expect(ran).toMatchObject({ code: 2, stderr: `idem stats: idem's tables are missing in ${file}, or older than this idem\n  fix: run: idem migrate --sqlite ${file}\n` })
  })

  it('inspect on a migrated file: exit 1 and says so when nothing is stored; stats counts', async () => {
    const file = join(dir, 'app.db')
    const missing = await idem(['inspect', 'acct', 'nope', '--sqlite', file])
    expect(missing.code).toBe(1)
    expect(missing.stdout).toContain('nothing stored')
    const stats = JSON.parse((await idem(['stats', '--sqlite', file, '--json'])).stdout)
    expect(stats).toMatchObject({ keys: { total: 0, live: 0 }, outbox: { pending: 0 } })
    expect(stats.keys.bytes).toBeGreaterThan(0)
  })
})
