import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { idem, inProcess, noStack, type Ran } from './support.js'

const db = await testSchema('idem_cli_secrets', 2)
const base = new URL(PG_URL)
// Trust auth lets any password in, so a command that prints it is seen to; a test
// Postgres with a password of its own has that one tested instead. The @ and the space
// make the URL forms percent-encode it and the keyword/value forms quote it.
const SECRET = base.password === '' ? `s3cret@ ${randomBytes(6).toString('hex')}` : decodeURIComponent(base.password)
const ENCODED = encodeURIComponent(SECRET)
const quoted = (value: string): string => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`

interface Place {
  host?: string
  port?: string
  user?: string
  database?: string
}

/** Every form in which pg takes a password, all naming one database. */
function forms(place: Place = {}): [string, string][] {
  const { host = base.hostname, port = base.port || '5432', user = decodeURIComponent(base.username) || 'postgres', database = base.pathname.slice(1) || 'postgres' } = place
  return [
    ['URL userinfo', `postgres://${user}:${ENCODED}@${host}:${port}/${database}`],
    ['?password=', `postgresql://${host}:${port}/${database}?user=${user}&password=${ENCODED}`],
    ['?sslpassword= beside userinfo', `postgres://${user}:${ENCODED}@${host}:${port}/${database}?sslpassword=${ENCODED}&application_name=idem-cli`],
    ['libpq keyword/value pairs', `host=${host} port=${port} user=${user} password=${quoted(SECRET)} dbname=${database}`],
    ['libpq, spaced and quoted', `host = ${host}  port=${port} user=${quoted(user)} password = ${quoted(SECRET)} sslpassword=${quoted(SECRET)} dbname=${quoted(database)}`],
  ]
}

/** One of the forms, by name. */
const form = (name: string, place: Place = {}): string => forms(place).find(([n]) => n === name)![1]

/** Neither stream holds the secret, as written or percent-encoded, and no stack trace. */
function hidden(ran: Ran | { out: string[]; err: string[]; progress: (string | undefined)[] }, form: string): void {
  const all = 'stdout' in ran ? ran.stdout + ran.stderr : [...ran.out, ...ran.err, ...ran.progress].join('\n')
  expect(all, form).not.toContain(SECRET)
  expect(all, form).not.toContain(ENCODED)
  if ('stdout' in ran) noStack(ran)
}

/** Runs the command once per form, all at once, and checks each run's output. */
async function eachForm(place: Place, args: (connection: string) => string[], check: (ran: Ran, form: string) => void): Promise<void> {
  const runs = forms(place).map(async ([form, connection]) => {
    const ran = await idem(args(connection))
    hidden(ran, form)
    check(ran, form)
  })
  await Promise.all(runs)
}

describe.skipIf(db === undefined)('idem on Postgres shows no password, in any form pg takes it', () => {
  const { pool, schema } = db as TestSchema
  const at = ['--schema', schema]
  afterAll(() => db?.drop())

  it('migrate, prune, inspect, stats and reconcile succeed with each form; stdout, stderr and --json hold no password', async () => {
    await pool.query(`CREATE TABLE "${schema}".orders (account text, order_key text)`)
    await eachForm({}, (c) => ['migrate', '--postgres', c, ...at, '--json'], (ran, form) => {
      expect(ran.code, form).toBe(0)
      expect(JSON.parse(ran.stdout).target, form).toMatch(/^--postgres '.*\*\*\*.*' --schema /)
    })
    for (const json of [[], ['--json']]) {
      await eachForm({}, (c) => ['migrate', '--postgres', c, ...at, '--dry-run', ...json], (ran, form) => expect(ran.code, form).toBe(0))
      await eachForm({}, (c) => ['prune', '--postgres', c, ...at, ...json], (ran, form) => expect(ran.code, form).toBe(0))
      await eachForm({}, (c) => ['inspect', 'acct', 'order-1', '--postgres', c, ...at, ...json], (ran, form) => expect(ran.code, form).toBe(1))
      await eachForm({}, (c) => ['stats', '--postgres', c, ...at, ...json], (ran, form) => {
        expect(ran.code, form).toBe(0)
        expect(ran.stdout, form).toContain('***')
      })
      await eachForm({}, (c) => ['reconcile', '--postgres', c, ...at, '--table', 'orders', '--columns', 'account,order_key', ...json], (ran, form) => expect(ran.code, form).toBe(0))
    }
  })

  it('a terminal: the progress line and every line written in-process hold no password', async () => {
    for (const [form, connection] of forms()) hidden(await inProcess(['prune', '--postgres', connection, ...at], true), form)
  })

  it('keyword/value pairs are read as pg reads the same query parameters: the same counts as the URL, options reaching the server', async () => {
    const url = form('URL userinfo')
    const pairs = form('libpq keyword/value pairs')
    const counts = async (connection: string) => {
      const { target, ...rest } = JSON.parse((await idem(['stats', '--postgres', connection, ...at, '--json'])).stdout) as Record<string, unknown>
      return rest
    }
    expect(await counts(pairs)).toEqual(await counts(url))
    // A quoted value with spaces and an = in it is one setting: without --schema, reconcile finds the table on the search path it sets.
    const onPath = await idem(['reconcile', '--postgres', `${pairs} options='-c search_path=${schema}'`, '--table', 'orders', '--columns', 'account', '--json'])
    expect(onPath.code).toBe(0)
    expect(JSON.parse(onPath.stdout)).toMatchObject({ table: 'orders', totalRows: 0 })
    // sslmode reaches pg too: this server has SSL off, so requiring it is refused.
    const ssl = await idem(['stats', '--postgres', `${pairs} sslmode=require`, ...at])
    hidden(ssl, 'sslmode=require')
    expect(ssl.code).toBe(2)
    expect(ssl.stderr).toMatch(/cannot connect to Postgres at "host=.* password=\*\*\* .*sslmode=require": The server does not support SSL connections/)
  })

  it.each<[string, Place, RegExp]>([
    ['an unreachable port', { port: '1' }, /cannot connect to Postgres at .*ECONNREFUSED[^\n]*\n {2}fix: check the (URL|connection string) and that Postgres is running/],
    ['an unknown host', { host: 'idem-no-such-host.invalid' }, /cannot connect to Postgres at .*(ENOTFOUND|EAI_AGAIN) idem-no-such-host\.invalid/],
    ['a role the server refuses', { user: 'idem_no_such_role' }, /(role "idem_no_such_role" does not exist|password authentication failed for user "idem_no_such_role")\n {2}fix: check the user and password in/],
    ['a database that does not exist', { database: 'idem_no_such_db' }, /database "idem_no_such_db" does not exist\n {2}fix: check the database name in/],
  ])('%s: the error names it, with the password masked', async (_, place, said) => {
    await eachForm(place, (c) => ['stats', '--postgres', c], (ran, form) => {
      expect(ran.code, form).toBe(2)
      expect(ran.stderr, form).toMatch(said)
      expect(ran.stderr, form).toContain('***')
    })
  })

  it('tables missing: the migrate it suggests masks the password, quoted for a shell', async () => {
    await eachForm({}, (c) => ['prune', '--postgres', c, '--schema', `${schema}_none`], (ran, form) => {
      expect(ran.code, form).toBe(2)
      const fix = /\n {2}fix: run: idem migrate --postgres ('.*') --schema (\w+)\n$/.exec(ran.stderr)
      expect(fix?.[1], form).toContain('***')
      expect(fix?.[2], form).toBe(`${schema}_none`)
    })
  })

  it.each<[string, string, RegExp]>([
    ['a URL with a port out of range', `postgres://postgres:${ENCODED}@127.0.0.1:99999/test`, /--postgres "postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:99999\/test" is not a URL/],
    ['a URL with a / in its password', `postgres://postgres:${SECRET}/x@127.0.0.1/test`, /--postgres "postgres:\/\/postgres:\*\*\*@127\.0\.0\.1\/test" is not a URL/],
    ['a MySQL URL', `mysql://root:${ENCODED}@127.0.0.1:3306/test`, /--postgres "mysql:\/\/root:\*\*\*@127\.0\.0\.1:3306\/test" is a mysql URL/],
    ['pairs with a quote left open', `host=127.0.0.1 password='${SECRET}`, /--postgres is not a connection string: the quoted value at character 25 has no closing "'"/],
    ['pairs missing an =', `host=127.0.0.1 password ${quoted(SECRET)}`, /--postgres is not a connection string: the setting at character 16 has no "="/],
    ['pairs without a host', `port=5432 password=${quoted(SECRET)} dbname=test`, /--postgres "port=5432 password=\*\*\* dbname=test" names no host/],
    ['an sslkey file that is not there (URL)', `${PG_URL}?sslkey=/tmp/${ENCODED}.key`, /cannot connect to Postgres at [^\n]*sslkey=\*\*\*: ENOENT: no such file or directory, open '\*\*\*'/],
    ['an sslkey file that is not there (pairs)', `host=127.0.0.1 sslkey=${quoted(`/tmp/${SECRET}.key`)}`, /cannot connect to Postgres at "host=127\.0\.0\.1 sslkey=\*\*\*": ENOENT: no such file or directory, open '?\*\*\*'?/],
  ])('%s: refused, the secret masked', async (form, connection, said) => {
    for (const command of [['stats'], ['migrate'], ['prune'], ['inspect', 's', 'k'], ['reconcile', '--table', 't', '--columns', 'a']]) {
      const ran = await idem([...command, '--postgres', connection, '--json'])
      hidden(ran, `${command[0]}: ${form}`)
      expect(ran, `${command[0]}: ${form}`).toMatchObject({ code: 2, stdout: '' })
      expect(ran.stderr, `${command[0]}: ${form}`).toMatch(said)
    }
  })

  it('a mistyped flag: what commander quotes of the command line is masked, for every command', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-cli-secrets-'))
    try {
      const url = form('URL userinfo')
      for (const command of [['stats'], ['migrate'], ['prune'], ['inspect', 's', 'k'], ['reconcile', '--table', 't', '--columns', 'a'], ['sql', 'postgres'], ['policy', '--config', join(dir, 'none.mjs')]]) {
        const ran = await idem([...command, `--postgress=${url}`], { cwd: dir })
        hidden(ran, command[0]!)
        expect(ran.code, command[0]).toBe(2)
        expect(ran.stderr, command[0]).toContain("idem: unknown option '--postgress=postgres://")
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("--metrics with a password: the error and the fetch's own message mask it", async () => {
    const url = form('URL userinfo')
    for (const json of [[], ['--json']]) {
      const ran = await idem(['stats', '--postgres', url, ...at, '--metrics', `http://scraper:${ENCODED}@127.0.0.1:1/metrics`, ...json])
      hidden(ran, '--metrics')
      expect(ran.code).toBe(2)
      expect(ran.stderr).toContain('idem stats: cannot read http://scraper:***@127.0.0.1:1/metrics: ')
    }
  })

  it("pg's own errors name the host, the user or the database, never the password; an sslkey's names its file, which the CLI takes out", async () => {
    const failure = async (connectionString: string): Promise<string> => {
      try {
        // pg parses the string here, and throws at once on an sslkey that is not there.
        const client = new pg.Client({ connectionString, connectionTimeoutMillis: 10_000 })
        client.on('error', () => {})
        await client.connect()
        await client.end()
        return 'connected'
      } catch (error) {
        return (error as Error).message
      }
    }
    const places: Place[] = [{ port: '1' }, { host: 'idem-no-such-host.invalid' }, { user: 'idem_no_such_role' }, { database: 'idem_no_such_db' }]
    const said = await Promise.all(places.map((place) => failure(form('URL userinfo', place))))
    expect(said).toEqual([expect.stringContaining('ECONNREFUSED'), expect.stringMatching(/ENOTFOUND|EAI_AGAIN/), expect.stringContaining('idem_no_such_role'), expect.stringContaining('idem_no_such_db')])
    for (const message of said) {
      expect(message).not.toContain(SECRET)
      expect(message).not.toContain(ENCODED)
    }
    expect(await failure(`${PG_URL}?sslkey=/tmp/${ENCODED}.key`)).toContain(`/tmp/${SECRET}.key`)
  })
})
