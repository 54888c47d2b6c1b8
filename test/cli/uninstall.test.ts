// `idem uninstall`, the way out (#47): migrate, use the store, uninstall, and nothing of
// idem's is left in the schema, the file or the account, while the application's own
// tables stay as they were. Run as a user would, through the built `idem`.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/core/engine.js'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import { leasedPostgresStore } from '../../src/stores/postgres/leased.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { sqliteStore } from '../../src/stores/sqlite/store.js'
import { LOCAL_CREDENTIALS, testDynamo } from '../support/dynamodb.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { idem, noStack } from './support.js'

const stored = () => ({ status: 201, headers: [], bodyBase64: '' })

const pgDb = await testSchema('idem_uninstall', 4)

describe.skipIf(pgDb === undefined)('idem uninstall on Postgres', () => {
  const { pool, schema } = pgDb as TestSchema
  const where = ['--postgres', PG_URL, '--schema', schema]
  afterAll(() => pgDb?.drop())
  /** Every object named idem… in the schema: relations (tables, partitions, indexes, sequences), routines and types. */
  const leftovers = async (): Promise<string[]> =>
    (
      await pool.query(
        `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname LIKE 'idem%'
         UNION ALL SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname LIKE 'idem%'
         UNION ALL SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = $1 AND t.typname LIKE 'idem%'`,
        [schema],
      )
    ).rows.map((row: { name: string }) => row.name)

  it('migrate (daily partitions), use, --dry-run lists and keeps; without --yes refuses; --yes leaves nothing of idem, the app’s table intact; again: nothing', async () => {
    await pool.query(`CREATE TABLE "${schema}".orders (id int PRIMARY KEY); INSERT INTO "${schema}".orders VALUES (1), (2)`)
    expect((await idem(['migrate', ...where, '--key-layout', 'daily-partitions'])).code).toBe(0)
    expect((await idem(['prune', ...where, '--key-layout', 'daily-partitions'])).code).toBe(0)
    await createIdem({ store: postgresStore({ pool, schema, keyLayout: 'daily-partitions' }) }).run({ scope: 'a', key: 'k1', fingerprint: 'f' }, stored)
    await createLeasedIdem({ store: leasedPostgresStore({ pool, schema }) }).run({ scope: 'a', key: 'k2', input: 1 }, async (ctx) => ctx.step('s', () => 1))
    const before = await leftovers()
    expect(before).toEqual(expect.arrayContaining(['idem_keys', 'idem_keys_by_day', 'idem_leases', 'idem_steps', 'idem_inbox', 'idem_outbox', 'idem_migrations', 'idem_claim']))
    expect(before.some((name) => /^idem_keys_by_day_\d{8}$/.test(name)), 'a day partition exists').toBe(true)

    const dry = await idem(['uninstall', ...where, '--dry-run'])
    expect(dry.code).toBe(0)
    expect(dry.stdout).toContain(`\nDROP TABLE ${schema}.idem_keys CASCADE;\n`)
    expect(dry.stdout).toContain(`\nDROP ROUTINE ${schema}.idem_claim(p_scope text, p_key text, p_wait_ms integer, OUT state text, OUT fingerprint text, OUT outcome text);\n`)
    expect(dry.stdout).toContain('nothing was removed')
    expect(await leftovers()).toEqual(before)

    const unasked = await idem(['uninstall', ...where])
    expect(unasked.code).toBe(2)
    expect(unasked.stderr).toContain("uninstall deletes idem's tables and every record in them")
    expect(unasked.stderr).toContain('--dry-run; then run it with --yes')
    noStack(unasked)
    expect(await leftovers()).toEqual(before)

    const ran = await idem(['uninstall', ...where, '--yes', '--json'])
    expect(ran.code).toBe(0)
    const report = JSON.parse(ran.stdout) as { dryRun: boolean; removed: string[] }
    expect(report.dryRun).toBe(false)
    expect(report.removed.length).toBeGreaterThan(8)
    expect(await leftovers()).toEqual([])
    expect((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".orders`)).rows[0].n).toBe(2)

    expect((await idem(['uninstall', ...where, '--yes'])).stdout).toBe(`idem: nothing of idem's in --postgres ${PG_URL} --schema ${schema}\n`)
    // And back: a later migrate starts from nothing.
    expect((await idem(['migrate', ...where])).stdout).toContain('idem: schema at version 0')
  })
})

describe('idem uninstall on SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-uninstall-'))
  const file = join(dir, 'app.db')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('migrate, use, uninstall: no table, index or trigger of idem’s left; the app’s table intact', async () => {
    expect((await idem(['migrate', '--sqlite', file])).code).toBe(0)
    const db = new Database(file)
    try {
      db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY); INSERT INTO orders VALUES (1)')
      await createIdem({ store: sqliteStore({ db }) }).run({ scope: 'a', key: 'k1', fingerprint: 'f' }, stored)
      const idemObjects = () => db.prepare("SELECT type, name FROM sqlite_master WHERE name LIKE 'idem%'").all() as { type: string; name: string }[]
      expect(idemObjects().filter((o) => o.type === 'table').length).toBeGreaterThan(4)
      expect(idemObjects().some((o) => o.type === 'index'), 'idem made an index').toBe(true)

      const dry = await idem(['uninstall', '--sqlite', file, '--dry-run'])
      expect(dry.stdout).toContain('DROP TABLE "idem_keys";')
      expect(idemObjects().length).toBeGreaterThan(4)

      const ran = await idem(['uninstall', '--sqlite', file, '--yes'])
      expect(ran.code).toBe(0)
      expect(ran.stdout).toMatch(/^idem: removed \d+ of idem's objects:\n/)
      expect(idemObjects()).toEqual([])
      expect(db.prepare('SELECT count(*) AS n FROM orders').get()).toEqual({ n: 1 })
    } finally {
      db.close()
    }
  })
})

const dynamo = await testDynamo('uninstall')

describe.skipIf(dynamo === undefined)('idem uninstall on DynamoDB', () => {
  const { client, table, endpoint, store } = dynamo!
  const where = ['--dynamodb', table, '--endpoint', endpoint]
  const env = { AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.credentials.secretAccessKey, AWS_REGION: LOCAL_CREDENTIALS.region }
  afterAll(() => dynamo?.drop())

  it('use, --dry-run names the table and keeps it, --yes deletes it', async () => {
    await createLeasedIdem({ store }).run({ scope: 'a', key: 'k', input: 1 }, async (ctx) => ctx.step('s', () => 1))
    const dry = await idem(['uninstall', ...where, '--dry-run'], { env })
    expect(dry.stdout).toContain(`DeleteTable ${table};`)
    await client.send(new DescribeTableCommand({ TableName: table }))
    const ran = await idem(['uninstall', ...where, '--yes'], { env })
    expect(ran.code).toBe(0)
    expect(ran.stdout).toBe(`idem: removed 1 of idem's objects:\n  DeleteTable ${table}\n`)
    await expect(client.send(new DescribeTableCommand({ TableName: table }))).rejects.toMatchObject({ name: 'ResourceNotFoundException' })
  })
})
