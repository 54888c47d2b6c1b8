import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../src/core/errors/index.js'
import { reconcile, type ReconcileOptions, type ReconcileReport } from '../../src/data/index.js'
import { postgresDialect } from '../../src/stores/postgres/index.js'
import { sqliteDialect } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { testSqlite } from './sqlite.js'

// 10 rows: (a,1) ×3, (b,1) ×2, (b,2) ×1, (c,1) ×1, (NULL,1) ×2, (d,1) ×1.
const ROWS: [string | null, number][] = [
  ['a', 1], ['a', 1], ['a', 1], ['b', 1], ['b', 1], ['b', 2], ['c', 1], [null, 1], [null, 1], ['d', 1],
]

type Check = (options: Omit<ReconcileOptions, 'dialect' | 'client'>) => Promise<ReconcileReport>

function itReconciles(check: () => Check): void {
  it('counts duplicate rows (beyond the first of each group), the rate, and lists groups largest first', async () => {
    const report = await check()({ table: 'events', columns: ['tenant', 'n'] })
    expect(report).toMatchObject({
      table: 'events',
      columns: ['tenant', 'n'],
      totalRows: 10,
      duplicateRows: 4, // (a,1) 2 extra, (b,1) 1, (NULL,1) 1
      groupCount: 3,
      duplicateRate: 0.4,
      threshold: 0.0001,
      exceeded: true,
    })
    expect(report.groups[0]).toEqual({ values: { tenant: 'a', n: 1 }, rows: 3 })
    expect(report.groups.slice(1).map((g) => g.rows)).toEqual([2, 2])
    expect(report.groups.map((g) => g.values.tenant)).toContain(null) // NULLs group together
  })

  it('bounds the list of groups with "limit", not the counts', async () => {
    const report = await check()({ table: 'events', columns: ['tenant', 'n'], limit: 1 })
    expect(report.groups).toEqual([{ values: { tenant: 'a', n: 1 }, rows: 3 }])
    expect(report.groupCount).toBe(3)
    expect((await check()({ table: 'events', columns: ['tenant'], limit: 0 })).groups).toEqual([])
  })

  it('says whether the rate is above the threshold', async () => {
    expect((await check()({ table: 'events', columns: ['tenant', 'n'], threshold: 0.4 })).exceeded).toBe(false)
    expect((await check()({ table: 'events', columns: ['tenant', 'n'], threshold: 0.39 })).exceeded).toBe(true)
  })

  it('reports a clean table and an empty one as 0', async () => {
    expect(await check()({ table: 'clean', columns: ['id'] })).toMatchObject({ totalRows: 3, duplicateRows: 0, duplicateRate: 0, exceeded: false, groups: [] })
    expect(await check()({ table: 'empty', columns: ['id'] })).toMatchObject({ totalRows: 0, duplicateRate: 0, exceeded: false })
  })

  it.each([
    ['a table carrying SQL', { table: 'events where 1=1', columns: ['n'] }, /reconcile: option "table" must be a plain SQL identifier/],
    ['no columns', { table: 'events', columns: [] }, /reconcile: option "columns" must be a non-empty array/],
    ['a threshold above 1', { table: 'events', columns: ['n'], threshold: 5 }, /option "threshold" must be a rate between 0 and 1/],
    ['a negative limit', { table: 'events', columns: ['n'], limit: -1 }, /option "limit"/],
  ])('refuses %s with InvalidOptionError', async (_, options, message) => {
    await expect(check()(options)).rejects.toThrow(InvalidOptionError)
    await expect(check()(options)).rejects.toThrow(message)
  })
}

describe('reconcile on SQLite (a real file)', () => {
  const files = testSqlite('idem-reconcile')
  const db = files.open('reconcile')
  db.exec('CREATE TABLE events (id INTEGER PRIMARY KEY, tenant TEXT, n INTEGER)')
  db.exec('CREATE TABLE clean (id TEXT)')
  db.exec('CREATE TABLE empty (id TEXT)')
  const insert = db.prepare('INSERT INTO events (tenant, n) VALUES (?, ?)')
  for (const [tenant, n] of ROWS) insert.run(tenant, n)
  db.exec(`INSERT INTO clean VALUES ('x'), ('y'), ('z')`)
  afterAll(() => files.close())

  itReconciles(() => (options) => reconcile({ ...options, dialect: sqliteDialect, client: db }))
})

const pgDb = await testSchema('idem_data_reconcile')

describe.skipIf(pgDb === undefined)('reconcile on Postgres (real Postgres)', () => {
  const { pool, schema } = pgDb as TestSchema
  beforeAll(async () => {
    await pool.query(`CREATE TABLE "${schema}".events (id serial PRIMARY KEY, tenant text, n integer)`)
    await pool.query(`CREATE TABLE "${schema}".clean (id text)`)
    await pool.query(`CREATE TABLE "${schema}".empty (id text)`)
    for (const [tenant, n] of ROWS) await pool.query(`INSERT INTO "${schema}".events (tenant, n) VALUES ($1, $2)`, [tenant, n])
    await pool.query(`INSERT INTO "${schema}".clean VALUES ('x'), ('y'), ('z')`)
  })
  afterAll(() => pgDb?.drop())

  itReconciles(() => (options) => reconcile({ ...options, schema, dialect: postgresDialect, client: pool }))
})

describe('reconcile without a dialect or a connection', () => {
  it('asks for the dialect, and for its client', async () => {
    await expect(reconcile({ table: 't', columns: ['a'] } as unknown as ReconcileOptions)).rejects.toThrow(/"dialect" must be a store's SQL dialect/)
    await expect(reconcile({ dialect: postgresDialect, table: 't', columns: ['a'] } as unknown as ReconcileOptions)).rejects.toThrow(/option "client" must be a pg client or pool/)
  })
})
