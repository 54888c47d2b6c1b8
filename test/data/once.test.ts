import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidOptionError, MigrationRequiredError } from '../../src/core/errors/index.js'
import { createOnce } from '../../src/data/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { sqliteStore } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { testSqlite } from './sqlite.js'

const kind = 'claim-received-email'

describe('once on SQLite (a real file)', () => {
  const files = testSqlite('idem-once')
  const db = files.open('once')
  const store = sqliteStore({ db })
  store.migrate()
  const once = createOnce({ store })
  afterAll(() => files.close())

  it('is true only the first time, and the mark commits with the transaction', () => {
    const claim = randomUUID()
    expect(db.transaction(() => [once(db, kind, claim), once(db, kind, claim)])()).toEqual([true, false])
    expect(db.transaction(() => once(db, kind, claim))()).toBe(false)
    // Another kind, or another subject, is another gate.
    expect(db.transaction(() => [once(db, 'claim-closed-email', claim), once(db, kind, `${claim}-2`)])()).toEqual([true, true])
  })

  it('is forgotten when the transaction rolls back, so the retry passes the gate', () => {
    const claim = randomUUID()
    const attempt = db.transaction((fail: boolean) => {
      const first = once(db, kind, claim)
      if (fail) throw new Error('the side effect failed')
      return first
    })
    expect(() => attempt(true)).toThrow('the side effect failed')
    expect(attempt(false)).toBe(true)
    expect(attempt(false)).toBe(false)
  })

  it('treats 42, 42n and "42" as one subject (stored as text)', () => {
    expect(db.transaction(() => [once(db, 'numeric', 42), once(db, 'numeric', 42n), once(db, 'numeric', '42')])()).toEqual([
      true,
      false,
      false,
    ])
  })

  it('refuses to run outside a transaction, where the mark could not follow the side effect', () => {
    expect(() => once(db, kind, 'x')).toThrow(InvalidOptionError)
    expect(() => once(db, kind, 'x')).toThrow(/no open transaction/)
  })

  it.each([
    ['an empty kind', '', 'x', /"kind" is empty; it must be 1–200 characters/],
    ['an empty subject', kind, '', /"subject" is empty; it must be 1–1024 characters/],
    ['a fractional subject', kind, 1.5, /got 1.5/],
    ['an object subject', kind, { id: 1 }, /"subject"/],
  ])('refuses %s', (_, k, subject, message) => {
    expect(() => db.transaction(() => once(db, k as string, subject as string))()).toThrow(message)
  })

  it('reports a database that was never migrated as MigrationRequiredError', () => {
    const bare = files.open('bare')
    const onceOnBare = createOnce({ store: sqliteStore({ db: bare }) })
    expect(() => bare.transaction(() => onceOnBare(bare, kind, 'x'))()).toThrow(MigrationRequiredError)
  })
})

const pgDb = await testSchema('idem_data_once', 12)

describe.skipIf(pgDb === undefined)('once on Postgres (real Postgres)', () => {
  const { pool, schema } = pgDb as TestSchema
  const store = postgresStore({ pool, schema })
  const once = createOnce({ store })
  beforeAll(() => store.migrate())
  afterAll(() => pgDb?.drop())

  async function inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>, end: 'COMMIT' | 'ROLLBACK' = 'COMMIT'): Promise<T> {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      const result = await work(client)
      await client.query(end)
      return result
    } catch (error) {
      await client.query('ROLLBACK')
      throw error
    } finally {
      client.release()
    }
  }

  it('is true only the first time', async () => {
    const claim = randomUUID()
    expect(await inTransaction(async (c) => [await once(c, kind, claim), await once(c, kind, claim)])).toEqual([
      true,
      false,
    ])
    expect(await inTransaction((c) => once(c, kind, claim))).toBe(false)
  })

  it('is forgotten when the transaction rolls back', async () => {
    const claim = randomUUID()
    expect(await inTransaction((c) => once(c, kind, claim), 'ROLLBACK')).toBe(true)
    expect(await inTransaction((c) => once(c, kind, claim))).toBe(true)
    expect(await inTransaction((c) => once(c, kind, claim))).toBe(false)
  })

  it('makes a concurrent transaction wait: false if the first commits, true if it rolls back', async () => {
    for (const end of ['COMMIT', 'ROLLBACK'] as const) {
      const claim = randomUUID()
      const first = await pool.connect()
      try {
        await first.query('BEGIN')
        expect(await once(first, kind, claim)).toBe(true)
        const second = inTransaction((c) => once(c, kind, claim))
        // The second blocks on the first's uncommitted row until the first ends.
        await waitUntilBlocking(first)
        await first.query(end)
        expect(await second).toBe(end === 'ROLLBACK')
      } finally {
        first.release()
      }
    }
  })

  it('lets exactly one of 32 racing transactions through', async () => {
    const claim = randomUUID()
    const results = await Promise.all(Array.from({ length: 32 }, () => inTransaction((c) => once(c, kind, claim))))
    expect(results.filter(Boolean)).toHaveLength(1)
  })

  it('reports a schema that was never migrated as MigrationRequiredError, and checks the schema name', async () => {
    const unmigrated = createOnce({ store: postgresStore({ pool, schema: `${schema}_missing` }) })
    await expect(inTransaction((c) => unmigrated(c, kind, 'x'))).rejects.toThrow(MigrationRequiredError)
    expect(() => postgresStore({ pool, schema: 'bad schema' })).toThrow(/option "schema"/)
  })

  // Polls until some backend waits on `holder`'s locks: no sleeps standing in for order.
  async function waitUntilBlocking(holder: pg.PoolClient): Promise<void> {
    const { rows } = await holder.query('SELECT pg_backend_pid() AS pid')
    for (;;) {
      const waiting = await pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))', [rows[0].pid])
      if (waiting.rows[0].n > 0) return
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }
})

describe('once with something else', () => {
  it('refuses, at creation, a store without a once table', () => {
    expect(() => createOnce({ store: {} as never })).toThrow(/"store" must be a store with a once table/)
  })
})
