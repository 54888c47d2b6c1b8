import { spawn } from 'node:child_process'
import { afterAll, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/core/engine.js'
import { MYSQL_SCHEMA_VERSION, mysqlStore } from '../../src/stores/mysql/index.js'
import { testDatabase, type TestDatabase } from '../support/mysql.js'
import { idem, noStack } from './support.js'

const db = await testDatabase('idem_cli_mysql', 4)
const byHand = await testDatabase('idem_cli_mysql_sql', 2)

/** Runs the `mysql` command-line client on the database of `url` with `script` as its input. */
function mysqlClient(url: string, script: string): Promise<{ code: number | null; stderr: string }> {
  const { hostname, port, username, pathname } = new URL(url)
  const child = spawn('mysql', ['-h', hostname, '-P', port || '3306', '-u', decodeURIComponent(username), pathname.slice(1)], { stdio: ['pipe', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  child.stdin.end(script)
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stderr }))
  })
}

describe.skipIf(db === undefined)('idem on MySQL (--mysql)', () => {
  const { pool, url } = db as TestDatabase
  afterAll(() => Promise.all([db?.drop(), byHand?.drop()]))

  it('`idem sql mysql` run by the mysql client (DELIMITER $$ for the routines) records its version, and finishes when run again after stopping half-way: migrate finds it current, and the store runs on it', async () => {
    const { pool: handPool, url: handUrl } = byHand as TestDatabase
    const script = await idem(['sql', 'mysql'])
    expect(script.stdout).toMatch(/^-- idem schema from version 0 to \d+\n-- MySQL commits each DDL statement as it runs it: this is no transaction; if it stops half-way, run it again\.\nDELIMITER \$\$\n/)
    expect(script.stdout.trimEnd().endsWith('DELIMITER ;')).toBe(true)
    // A run that stops half-way (the connection lost after some of the statements) is
    // finished by running the whole script again: each statement can run again.
    const statements = script.stdout.split('$$\n')
    const half = statements.slice(0, Math.floor(statements.length / 2)).join('$$\n') + '$$\nDELIMITER ;\n'
    expect(await mysqlClient(handUrl, half)).toEqual({ code: 0, stderr: '' })
    expect(await mysqlClient(handUrl, script.stdout)).toEqual({ code: 0, stderr: '' })
    expect((await idem(['migrate', '--mysql', handUrl])).stdout).toContain(`already at version ${MYSQL_SCHEMA_VERSION}`)
    const engine = createIdem({ store: mysqlStore({ pool: handPool }), waitMs: 0 })
    expect(await engine.run({ scope: 'acct', key: 'by-hand', input: 1 }, async () => 'ran')).toMatchObject({ value: 'ran', replayed: false })
    expect(await engine.run({ scope: 'acct', key: 'by-hand', input: 1 }, async () => 'again')).toMatchObject({ value: 'ran', replayed: true })
  })

  it('names missing tables and the migrate that creates them; a URL without a database is refused before connecting', async () => {
    const ran = await idem(['stats', '--mysql', url])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toBe(`idem stats: idem's tables are missing in ${url}, or older than this idem\n  fix: run: idem migrate --mysql ${url}\n`)
    const bare = await idem(['prune', '--mysql', url.replace(/\/[^/]*$/, '/')])
    expect(bare.stderr).toContain('names no database')
    noStack(bare)
  })

  it('migrates (again: nothing to apply), then inspects, counts and prunes the records the store wrote', async () => {
    const migrated = (await idem(['migrate', '--mysql', url])).stdout
    // MySQL commits DDL as it runs it: the plan does not claim one transaction.
    expect(migrated).toContain('idem: schema at version 0; applying, each statement safe to run again (DDL commits as it runs here):\n  version 1: ')
    expect(migrated).toContain(`idem: migrated from version 0 to ${MYSQL_SCHEMA_VERSION} (applied 1)\n`)
    expect((await idem(['migrate', '--mysql', url])).stdout).toContain(`already at version ${MYSQL_SCHEMA_VERSION}`)
    const engine = createIdem({ store: mysqlStore({ pool }), waitMs: 0 })
    await engine.run({ scope: 'acct', key: 'kept', input: 1 }, async () => ({ status: 201 }))
    await engine.run({ scope: 'acct', key: 'gone', input: 1, ttlMs: 1 }, async () => 'short')
    await new Promise((resolve) => setTimeout(resolve, 5))

    const inspected = JSON.parse((await idem(['inspect', '--mysql', url, 'acct', 'kept', '--json'])).stdout)
    expect(inspected.record).toMatchObject({ expired: false, outcomeBytes: 14 })
    const stats = JSON.parse((await idem(['stats', '--mysql', url, '--json'])).stdout)
    expect(stats.keys).toMatchObject({ total: 2, live: 1, expired: 1, recent: 2 })
    const pruned = await idem(['prune', '--mysql', url])
    expect(pruned.code).toBe(0)
    expect(pruned.stdout).toContain('pruned 1 expired record')
    const [rows] = await pool.query("SELECT CONVERT(`key` USING utf8mb4) AS k FROM idem_keys WHERE fingerprint <> ''")
    expect(rows).toEqual([{ k: 'kept' }])
  })

  it('uninstall: --dry-run lists every routine and table of idem\'s and drops nothing; --yes drops them, and leaves the app\'s own tables', async () => {
    await pool.query('CREATE TABLE app_orders (id INT PRIMARY KEY) ENGINE=InnoDB')
    const dry = await idem(['uninstall', '--mysql', url, '--dry-run'])
    expect(dry.stdout).toContain('DROP PROCEDURE `idem_keys_claim`;')
    expect(dry.stdout).toContain('DROP TABLE `idem_keys`;')
    expect(dry.stdout).not.toContain('app_orders')
    expect(dry.stdout).toContain('each statement on its own (DDL commits as it runs here); nothing was removed')
    const names = async () => ((await pool.query("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1"))[0] as { t: string }[]).map((row) => row.t)
    expect(await names()).toContain('idem_keys')
    const ran = await idem(['uninstall', '--mysql', url, '--yes'])
    expect(ran.code).toBe(0)
    expect(await names()).toEqual(['app_orders'])
    const [routines] = await pool.query('SELECT COUNT(*) AS n FROM information_schema.routines WHERE routine_schema = DATABASE()')
    expect(Number((routines as { n: number }[])[0]!.n)).toBe(0)
  })
})
