import { UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/core/engine.js'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import type { LeasedStore } from '../../src/ports/leased-store.js'
import { migrateWith } from '../../src/cli/migrate.js'
import { leasePk } from '../../src/stores/dynamodb/items.js'
import { migrations } from '../../src/stores/postgres/dialect/migrations.js'
import { postgresMigrationScript, postgresOperator } from '../../src/stores/postgres/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { REDIS_URL, testRedis } from '../leased/support.js'
import { redisClients } from '../support/redis-clients.js'
import { LOCAL_CREDENTIALS, testDynamo } from '../support/dynamodb.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { migrateToPrevious, PREVIOUS_VERSION } from '../postgres/previous-version.js'
import { idem, inProcess, noStack } from './support.js'

// The schema version this build migrates Postgres to, and every version up to it.
const PG_LATEST = migrations.at(-1)!.version
const pgVersions = (from: number): string => migrations.filter((m) => m.version >= from).map((m) => m.version).join(', ')
// What `idem migrate` prints before it applies the versions after `from`.
const pgPlan = (from: number): string =>
  [`idem: schema at version ${from}; applying, in one transaction:`, ...migrations.filter((m) => m.version > from).map((m) => `  version ${m.version}: ${m.description}`), ''].join('\n')

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
    expect((await idem(['migrate', '--postgres', PG_URL, '--schema', schema])).stdout).toBe(`${pgPlan(0)}idem: migrated from version 0 to ${PG_LATEST} (applied ${pgVersions(1)})\n`)
    expect((await idem(['migrate', '--postgres', PG_URL, '--schema', schema, '--dry-run'])).stdout).toBe(`-- already at version ${PG_LATEST}: nothing to apply\n`)
  })

  it('an upgrade from version 6: --dry-run prints the SQL of what follows and applies nothing; migrate says what it applies, and what each version does, before applying it', async () => {
    const [cli, told] = [`${schema}_v6`, `${schema}_v6_told`]
    const version = async (at: string): Promise<number> => (await pool.query(`SELECT max(version) AS v FROM "${at}".idem_migrations`)).rows[0].v
    const after = migrations.filter((m) => m.version > PREVIOUS_VERSION).map((m) => m.version)
    try {
      for (const at of [cli, told]) {
        await pool.query(`CREATE SCHEMA "${at}"`)
        await migrateToPrevious(pool, at, 'table')
      }
      const dry = await idem(['migrate', '--postgres', PG_URL, '--schema', cli, '--dry-run'])
      const script = postgresMigrationScript(cli, PREVIOUS_VERSION).map((statement) => (statement.startsWith('--') ? statement : `${statement};\n`))
      expect(dry.stdout).toBe([`-- from version ${PREVIOUS_VERSION} to ${PG_LATEST}; nothing was applied`, ...script, ''].join('\n'))
      expect(dry.stdout).toContain(`DROP INDEX IF EXISTS "${cli}".idem_keys_expires_at;`)
      expect(await version(cli)).toBe(PREVIOUS_VERSION)
      // With daily partitions a migrate also makes the days ahead, outside the script's transaction: said, not hidden.
      const days = await idem(['migrate', '--postgres', PG_URL, '--schema', cli, '--dry-run', '--key-layout', 'daily-partitions'])
      expect(days.stdout).toMatch(/\n-- then, each in a short transaction of its own: CREATE TABLE IF NOT EXISTS for the partitions of idem_keys_by_day .+\n$/)

      const ran = await idem(['migrate', '--postgres', PG_URL, '--schema', cli])
      expect(ran.stdout).toBe(`${pgPlan(PREVIOUS_VERSION)}idem: migrated from version ${PREVIOUS_VERSION} to ${PG_LATEST} (applied ${after.join(', ')})\n`)
      expect(await version(cli)).toBe(PG_LATEST)

      // The plan is told before anything is applied.
      const operator = postgresOperator({ pool, schema: told })
      const order: string[] = []
      const schemaMigrations = { ...operator.migrations, migrate: () => (order.push('migrate'), operator.migrations.migrate()) }
      const announce = (from: number, pending: { version: number }[]): void => void order.push(`announce ${from}: ${pending.map((p) => p.version).join(', ')}`)
      const report = await migrateWith({ ...operator, migrations: schemaMigrations }, {}, `--postgres ${PG_URL} --schema ${told}`, announce)
      expect(order).toEqual([`announce ${PREVIOUS_VERSION}: ${after.join(', ')}`, 'migrate'])
      expect(report).toMatchObject({ from: PREVIOUS_VERSION, to: PG_LATEST, applied: after })
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${cli}" CASCADE; DROP SCHEMA IF EXISTS "${told}" CASCADE`)
    }
  })

  it('another instance migrating between its version read and its check for tables made by hand: migrate goes on, finding the schema current', async () => {
    const racing = `${schema}_race`
    const operator = postgresOperator({ pool, schema: racing })
    const real = operator.migrations
    let reads = 0
    // The other instance commits right after this one read version 0, as five `idem migrate` started together can.
    const current = async () => {
      const version = await real.current()
      if (reads++ === 0) await postgresOperator({ pool, schema: racing }).migrations.migrate()
      return version
    }
    try {
      await pool.query(`CREATE SCHEMA "${racing}"`)
      const report = await migrateWith({ ...operator, migrations: { ...real, current } }, {}, `--postgres ${PG_URL} --schema ${racing}`)
      expect(report).toMatchObject({ from: PG_LATEST, to: PG_LATEST, applied: [] })
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${racing}" CASCADE`)
    }
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
      expect((await idem(['migrate', '--postgres', PG_URL, '--schema', old, '--baseline', '1'])).stdout).toBe(`${pgPlan(1)}idem: migrated from version 1 to ${PG_LATEST} (applied ${pgVersions(2)})\n`)
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

/** Key job-7 of acct_1 held by a leased call that has done its step 'charge', until `release`. */
async function heldLease(store: LeasedStore): Promise<{ release: () => void; running: Promise<unknown> }> {
  let release: (() => void) | undefined
  const running = createLeasedIdem({ store, leaseMs: 60_000 }).run({ scope: 'acct_1', key: 'job-7', input: 1 }, async (ctx) => {
    await ctx.step('charge', () => 'ch_1')
    // Redis makes a fencing token only once a call asks for one.
    await ctx.fencingToken()
    await new Promise<void>((resolve) => (release = resolve))
    return 'done'
  })
  while (release === undefined) await new Promise((r) => setTimeout(r, 10))
  return { release, running }
}

const redis = await testRedis('cli')

describe.skipIf(redis === undefined)('idem inspect on Redis', () => {
  const clients = redisClients()
  afterAll(async () => {
    await clients.close()
    await redis?.drop()
  })

  it('answers Redis where pruning means nothing, and exits 0', async () => {
    const ran = await idem(['prune', '--redis', REDIS_URL, '--prefix', redis!.prefix])
    expect(ran).toMatchObject({ code: 0, stdout: "idem: Redis expires idem's keys itself (each carries its retention as a TTL): nothing to prune\n" })
  })

  // The CLI reads with ioredis; the key is written through each client the store takes.
  it.each(clients.kinds)('shows a held lease written through $name: state, fencing token, steps done', async (kind) => {
    const prefix = `${redis!.prefix}${kind.name.replace(' ', '-')}:`
    const { release, running } = await heldLease(redisStore({ client: await kind.connect(REDIS_URL), prefix }))
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
    const { release, running } = await heldLease(store)
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
