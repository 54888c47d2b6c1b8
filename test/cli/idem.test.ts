import { UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import Database from 'better-sqlite3'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli/idem.js'
import { createIdem } from '../../src/core/engine.js'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import { migrations } from '../../src/stores/postgres/dialect/migrations.js'

// The schema version this build migrates Postgres to, and every version up to it.
const PG_LATEST = migrations.at(-1)!.version
const pgVersions = (from: number): string => migrations.filter((m) => m.version >= from).map((m) => m.version).join(', ')
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { sqliteMigrations } from '../../src/stores/sqlite/migrations.js'
import { REDIS_URL, testRedis } from '../leased/support.js'
import { LOCAL_CREDENTIALS, testDynamo } from '../support/dynamodb.js'
import { leasePk } from '../../src/stores/dynamodb/items.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'

const root = new URL('../..', import.meta.url).pathname
const cli = join(root, 'dist/cli/idem.js')
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }

interface Ran {
  code: number
  stdout: string
  stderr: string
}

/** Runs the built `idem` as a user would, never throwing: the exit code is part of the answer. */
function idem(args: string[], options: { cwd?: string; env?: Record<string, string>; node?: string[] } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...(options.node ?? []), cli, ...args], { cwd: options.cwd, env: { ...process.env, ...options.env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr })
    })
  })
}

/** The same in-process, with a terminal's progress line captured. */
async function inProcess(args: string[], tty = false) {
  const out: string[] = []
  const err: string[] = []
  const progress: (string | undefined)[] = []
  const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), progress: tty ? (l) => progress.push(l) : undefined })
  return { code, out, err, progress }
}

const noStack = (ran: Ran) => expect(ran.stderr, 'no stack trace').not.toMatch(/\n\s+at /)

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
    ['an unknown dialect', ['sql', 'mysql'], "idem: command-argument value 'mysql' is invalid for argument 'dialect'. Allowed choices are postgres, sqlite."],
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

describe('idem migrate and idem sql (SQLite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-cli-sqlite-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('migrates a file once, then reports it is current', async () => {
    const file = join(dir, 'app.db')
    expect((await idem(['migrate', '--sqlite', file])).stdout).toBe('idem: migrated from version 0 to 4 (applied 1, 2, 3, 4)\n')
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
    expect((await idem(['migrate', '--sqlite', file, '--baseline', '2'])).stdout).toBe('idem: migrated from version 2 to 4 (applied 3, 4)\n')
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

const pgDb = await testSchema('idem_cli', 4)

describe.skipIf(pgDb === undefined)('idem on Postgres', () => {
  const { pool, schema } = pgDb as TestSchema
  const s = `"${schema}"`
  afterAll(() => pgDb?.drop())

  it('names missing tables and the migrate that creates them', async () => {
    const ran = await idem(['prune', '--postgres', PG_URL, '--schema', `${schema}_none`])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toBe(`idem prune: idem's tables are missing in schema "${schema}_none", or older than this idem\n  fix: run: idem migrate --postgres ${PG_URL} --schema ${schema}_none\n`)
    const other = await idem(['migrate', '--postgres', PG_URL.replace(/\/[^/]*$/, '/no_such_db_here')])
    expect(other.stderr).toContain('database "no_such_db_here" does not exist\n  fix: check the database name in the URL, or create it')
  })

  it('migrates with --dry-run (applying nothing), then for real', async () => {
    const dry = await idem(['migrate', '--postgres', PG_URL, '--schema', schema, '--dry-run'])
    expect(dry.stdout).toContain(`-- from version 0 to ${PG_LATEST}; nothing was applied`)
    expect(dry.stdout).toContain(`CREATE TABLE ${s}.idem_keys`)
    expect((await pool.query(`SELECT to_regclass('${s}.idem_keys') AS t`)).rows[0].t).toBeNull()
    expect((await idem(['migrate', '--postgres', PG_URL, '--schema', schema])).stdout).toBe(`idem: migrated from version 0 to ${PG_LATEST} (applied ${pgVersions(1)})\n`)
    expect((await idem(['migrate', '--postgres', PG_URL, '--schema', schema, '--dry-run'])).stdout).toBe(`-- already at version ${PG_LATEST}: nothing to apply\n`)
  })

  it('`idem sql postgres` applied by hand (as psql would), then migrate: current, nothing fails', async () => {
    const other = `${schema}_dba`
    const script = (await idem(['sql', 'postgres', '--schema', other])).stdout
    try {
      await pool.query(script)
      expect(await idem(['migrate', '--postgres', PG_URL, '--schema', other])).toMatchObject({ code: 0, stdout: `idem: schema already at version ${PG_LATEST}\n` })
      const old = `${schema}_old`
      // What an older `idem sql` printed: the tables, without their versions.
      await pool.query(`CREATE SCHEMA "${old}"`)
      for (const statement of migrations[0]!.up(old)) await pool.query(statement)
      const refused = await idem(['migrate', '--postgres', PG_URL, '--schema', old])
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain("idem's tables exist (idem_keys) but no schema version is recorded")
      expect((await idem(['migrate', '--postgres', PG_URL, '--schema', old, '--baseline', '1'])).stdout).toBe(`idem: migrated from version 1 to ${PG_LATEST} (applied ${pgVersions(2)})\n`)
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${other}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_old" CASCADE`)
    }
  })

  it('prunes only expired keys: a summary line off a terminal, a progress bar on one', async () => {
    await pool.query(
      `INSERT INTO ${s}.idem_keys (scope, key, fingerprint, outcome, expires_at)
       SELECT 's', 'old-' || g, 'f', 'null', now() - interval '1 second' FROM generate_series(1, 250) g
       UNION ALL SELECT 's', 'live-' || g, 'f', 'null', now() + interval '1 hour' FROM generate_series(1, 10) g`,
    )
    const ran = await idem(['prune', '--postgres', PG_URL, '--schema', schema, '--batch-size', '100'])
    expect(ran.stdout).toMatch(/^idem: pruned 250 expired records in .+ \([\d,]+\/s, \d+ batches\)\n$/)
    await pool.query(`INSERT INTO ${s}.idem_keys (scope, key, fingerprint, outcome, expires_at) SELECT 's', 'old-' || g, 'f', 'null', now() - interval '1 second' FROM generate_series(1, 120) g`)
    const tty = await inProcess(['prune', '--postgres', PG_URL, '--schema', schema, '--batch-size', '50', '--json'], true)
    expect(tty.code).toBe(0)
    expect(JSON.parse(tty.out[0]!)).toMatchObject({ deleted: 120 })
    expect(tty.progress.at(-2)).toMatch(/^pruning \[#{30}\] 100% 120\/120 · [\d,]+\/s$/)
    expect(tty.progress.at(-1)).toBeUndefined()
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${s}.idem_keys`)).rows[0].n).toBe(10)
  })

  it('inspects a key: fingerprint, age, expiry, stored status; --json; exit 1 for an unknown key', async () => {
    const idemEngine = createIdem({ store: postgresStore({ pool, schema }) })
    await idemEngine.run({ scope: 'acct_1', key: 'order-42', fingerprint: 'fp-42' }, () => ({ status: 201, headers: [], bodyBase64: '' }))
    const text = await idem(['inspect', 'acct_1', 'order-42', '--postgres', PG_URL, '--schema', schema])
    expect(text.code).toBe(0)
    expect(text.stdout).toContain('key "order-42" in scope "acct_1"')
    expect(text.stdout).toMatch(/fingerprint\s+fp-42/)
    expect(text.stdout).toMatch(/stored\s+HTTP 201/)
    expect(text.stdout).toMatch(/expires\s+\S+ \(in 2\d h\)|expires\s+\S+ \(in 1\.\d d\)|expires\s+\S+ \(in 24 h\)/)
    const json = JSON.parse((await idem(['inspect', 'acct_1', 'order-42', '--postgres', PG_URL, '--schema', schema, '--json'])).stdout)
    expect(json).toMatchObject({ found: true, record: { fingerprint: 'fp-42', status: 201, expired: false } })
    expect(await idem(['inspect', 'acct_1', 'nope', '--postgres', PG_URL, '--schema', schema])).toMatchObject({ code: 1 })
  })

  it('stats: counts by stored status and per day, size on disk', async () => {
    const stats = JSON.parse((await idem(['stats', '--postgres', PG_URL, '--schema', schema, '--json', '--window', '1h'])).stdout)
    expect(stats.keys).toMatchObject({ total: 11, live: 11, expired: 0, recent: 11, byStatus: { '201': 1, other: 10 } })
    expect(stats.keys.byDay.reduce((n: number, d: { rows: number }) => n + d.rows, 0)).toBe(11)
    expect(stats.keys.rowsPerDay).toBe(11 * 24)
    expect(stats.keys.bytes).toBeGreaterThan(8192)
    expect(stats.requests).toBeUndefined()
  })

  it('stats and inspect see the keys of the daily-partitions layout too', async () => {
    const before = JSON.parse((await idem(['stats', '--postgres', PG_URL, '--schema', schema, '--json', '--window', '1h'])).stdout).keys
    const partitioned = postgresStore({ pool, schema, keyLayout: 'daily-partitions' })
    await partitioned.migrate()
    const engine = createIdem({ store: partitioned })
    for (const key of ['day-1', 'day-2', 'day-3']) {
      await engine.run({ scope: 'acct_day', key, fingerprint: `fp-${key}` }, () => ({ status: 202, headers: [], bodyBase64: '' }))
    }
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${s}.idem_keys_by_day WHERE scope = 'acct_day'`)).rows[0].n).toBe(3)
    const stats = JSON.parse((await idem(['stats', '--postgres', PG_URL, '--schema', schema, '--json', '--window', '1h'])).stdout).keys
    expect(stats).toMatchObject({ total: before.total + 3, live: before.live + 3, byStatus: { ...before.byStatus, '202': 3 } })
    expect(stats.bytes).toBeGreaterThan(before.bytes)
    const json = JSON.parse((await idem(['inspect', 'acct_day', 'day-2', '--postgres', PG_URL, '--schema', schema, '--json'])).stdout)
    expect(json).toMatchObject({ found: true, record: { fingerprint: 'fp-day-2', status: 202, expired: false } })
  })
})

const redis = await testRedis('cli')

describe.skipIf(redis === undefined)('idem inspect on Redis', () => {
  afterAll(() => redis?.drop())

  it('answers Redis where pruning means nothing, and exits 0', async () => {
    const ran = await idem(['prune', '--redis', REDIS_URL, '--prefix', redis!.prefix])
    expect(ran).toMatchObject({ code: 0, stdout: "idem: Redis expires idem's keys itself (each carries its retention as a TTL): nothing to prune\n" })
  })

  it('shows a held lease: state, fencing token, steps done', async () => {
    const { client, prefix } = redis!
    const idemLeased = createLeasedIdem({ store: redisStore({ client, prefix }), leaseMs: 60_000 })
    let release!: () => void
    const running = idemLeased.run({ scope: 'acct_1', key: 'job-7', input: 1 }, async (ctx) => {
      await ctx.step('charge', () => 'ch_1')
      await new Promise<void>((resolve) => (release = resolve))
      return 'done'
    })
    while (release === undefined) await new Promise((r) => setTimeout(r, 10))
    await new Promise((r) => setTimeout(r, 50))
    const json = JSON.parse((await idem(['inspect', 'acct_1', 'job-7', '--redis', REDIS_URL, '--prefix', prefix, '--json'])).stdout)
    expect(json).toMatchObject({ found: true, lease: { state: 'held', leaseLive: true, steps: [{ name: 'charge' }] } })
    expect(Number(json.lease.token)).toBeGreaterThan(0)
    const text = (await idem(['inspect', 'acct_1', 'job-7', '--redis', REDIS_URL, '--prefix', prefix])).stdout
    expect(text).toMatch(/state\s+held — a holder is running/)
    expect(text).toMatch(/steps done\s+charge/)
    release()
    await running
    const completed = JSON.parse((await idem(['inspect', 'acct_1', 'job-7', '--redis', REDIS_URL, '--prefix', prefix, '--json'])).stdout).lease
    // A completed key holds no lease, whatever its hash still says about the last one.
    expect(completed).toMatchObject({ state: 'completed', leaseUntil: null, leaseLive: false, steps: [] })
  })
})


const dynamo = await testDynamo('cli')

describe.skipIf(dynamo === undefined)('idem inspect, stats and prune on DynamoDB', () => {
  const { client, table, endpoint, store } = dynamo!
  const where = ['--dynamodb', table, '--endpoint', endpoint]
  // DynamoDB Local keeps one database per access key and region: the tests' own.
  const aws = { AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.credentials.secretAccessKey, AWS_REGION: LOCAL_CREDENTIALS.region }
  const saved = Object.fromEntries(Object.keys(aws).map((name) => [name, process.env[name]]))
  beforeAll(() => Object.assign(process.env, aws))
  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
    await dynamo?.drop()
  })

  it('inspect shows a held lease (state, fencing token, steps done), then the completed key; exit 1 for an unknown key', async () => {
    const idemLeased = createLeasedIdem({ store, leaseMs: 60_000 })
    let release!: () => void
    const running = idemLeased.run({ scope: 'acct_1', key: 'job-7', input: 1 }, async (ctx) => {
      await ctx.step('charge', () => 'ch_1')
      await new Promise<void>((resolve) => (release = resolve))
      return 'done'
    })
    while (release === undefined) await new Promise((r) => setTimeout(r, 10))
    const json = JSON.parse((await idem(['inspect', 'acct_1', 'job-7', ...where, '--json'], { env: aws })).stdout)
    expect(json).toMatchObject({ found: true, lease: { state: 'held', leaseLive: true, expired: false, steps: [{ name: 'charge' }] } })
    expect(Number(json.lease.token)).toBeGreaterThan(0)
    const text = (await idem(['inspect', 'acct_1', 'job-7', ...where], { env: aws })).stdout
    expect(text).toContain(`key "job-7" in scope "acct_1" (--dynamodb ${table} --endpoint ${endpoint})`)
    expect(text).toMatch(/state\s+held — a holder is running/)
    expect(text).toMatch(/steps done\s+charge/)
    release()
    await running
    const completed = JSON.parse((await idem(['inspect', 'acct_1', 'job-7', ...where, '--json'], { env: aws })).stdout).lease
    expect(completed).toMatchObject({ state: 'completed', leaseUntil: null, leaseLive: false, steps: [] })
    expect(await idem(['inspect', 'acct_1', 'nope', ...where], { env: aws })).toMatchObject({ code: 1 })
  })

  it('stats counts leases by state and the expired ones; prune deletes only those, with a progress bar on a terminal', async () => {
    for (let i = 0; i < 3; i++) await store.claim('acct_2', `live-${i}`, 'fp', 60_000, 60_000)
    // Keys whose retention ran out and which DynamoDB's TTL has not deleted yet (it takes
    // up to days; DynamoDB Local's takes seconds, so their TTL stays ahead here).
    for (let i = 0; i < 30; i++) {
      await store.claim('acct_2', `old-${i}`, 'fp', 60_000, 60_000)
      await client.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { pk: { S: leasePk('acct_2', `old-${i}`) }, sk: { S: '#' } },
          UpdateExpression: 'SET expiresAt = :past',
          ExpressionAttributeValues: { ':past': { N: String(Date.now() - 1_000) } },
        }),
      )
    }
    const before = JSON.parse((await idem(['stats', ...where, '--json'], { env: aws })).stdout)
    expect(before).toMatchObject({ target: `--dynamodb ${table} --endpoint ${endpoint}`, leases: { byState: { held: 33, completed: 1 }, expired: 30, bytes: null } })
    expect(before.keys).toBeUndefined()
    expect(before.outbox).toBeUndefined()
    const text = (await idem(['stats', ...where], { env: aws })).stdout
    expect(text).toMatch(/^leases\s+held 33, free 0, completed 1; 30 expired; unknown on disk$/m)
    expect(text).not.toMatch(/^(keys|outbox) /m)

    const tty = await inProcess(['prune', ...where, '--batch-size', '10', '--json'], true)
    expect(tty.err).toEqual([])
    expect(tty.code).toBe(0)
    expect(JSON.parse(tty.out[0]!)).toMatchObject({ deleted: 30, batches: 3 })
    expect(tty.progress.at(-2)).toMatch(/^pruning \[#{30}\] 100% 30\/30 · [\d,]+\/s$/)
    expect(tty.progress.at(-1)).toBeUndefined()
    const after = JSON.parse((await idem(['stats', ...where, '--json'], { env: aws })).stdout)
    expect(after.leases).toMatchObject({ byState: { held: 3, completed: 1 }, expired: 0 })
    expect(JSON.parse((await idem(['inspect', 'acct_2', 'live-1', ...where, '--json'], { env: aws })).stdout)).toMatchObject({ found: true, lease: { state: 'held' } })
    expect((await idem(['prune', ...where], { env: aws })).stdout).toMatch(/^idem: pruned 0 expired records in /)
  })

  it('names a missing table and how to create it', async () => {
    const ran = await idem(['stats', '--dynamodb', `${table}_none`, '--endpoint', endpoint], { env: aws })
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain(`idem stats: DynamoDB table "${table}_none" does not exist\n  fix: create it: await dynamodbStore({ client, table: '${table}_none' }).createTable()`)
    noStack(ran)
  })
})
