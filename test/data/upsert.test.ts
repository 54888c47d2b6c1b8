import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidOptionError } from '../../src/core/errors/index.js'
import { contentId, upsert, upsertSql, type UpsertSpec } from '../../src/data/index.js'
import { postgresDialect } from '../../src/stores/postgres/index.js'
import { sqliteDialect } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { testSqlite } from './sqlite.js'

const chunks: UpsertSpec = { table: 'chunks', key: 'id', columns: ['doc', 'body'] }

describe('upsertSql', () => {
  it('writes ON CONFLICT … DO UPDATE with bound values (Postgres)', () => {
    const sql = upsertSql(postgresDialect, { ...chunks, schema: 'app' })
    expect(sql.text).toBe(
      'INSERT INTO "app"."chunks" AS "existing" ("id", "doc", "body") VALUES ($1, $2, $3) ' +
        'ON CONFLICT ("id") DO UPDATE SET "doc" = excluded."doc", "body" = excluded."body"',
    )
    expect(sql.columns).toEqual(['id', 'doc', 'body'])
    expect(sql.values({ body: 'b', doc: 'd', id: 'x', ignored: 1 })).toEqual(['x', 'd', 'b'])
  })

  it('writes ? placeholders and a NULL-safe change test (SQLite, skipUnchanged)', () => {
    const sql = upsertSql(sqliteDialect, { ...chunks, skipUnchanged: true })
    expect(sql.text).toBe(
      'INSERT INTO "chunks" ("id", "doc", "body") VALUES (?, ?, ?) ON CONFLICT ("id") DO UPDATE SET ' +
        '"doc" = excluded."doc", "body" = excluded."body" WHERE "chunks"."doc" IS NOT excluded."doc" OR "chunks"."body" IS NOT excluded."body"',
    )
  })

  it('compares whole rows in Postgres with skipUnchanged', () => {
    expect(upsertSql(postgresDialect, { ...chunks, skipUnchanged: true }).text).toMatch(
      /WHERE \("existing"\."doc", "existing"\."body"\) IS DISTINCT FROM \(excluded\."doc", excluded\."body"\)$/,
    )
  })

  it('takes a composite key, and writes DO NOTHING when there is nothing else to write', () => {
    const sql = upsertSql(postgresDialect, { table: 'seen', key: ['intake_id', 'prompt_version'], columns: [] })
    expect(sql.text).toBe(
      'INSERT INTO "seen" AS "existing" ("intake_id", "prompt_version") VALUES ($1, $2) ON CONFLICT ("intake_id", "prompt_version") DO NOTHING',
    )
  })

  it.each([
    ['a table carrying SQL', { ...chunks, table: 'chunks; DROP TABLE x' }, /upsertSql: option "table" must be a plain SQL identifier/],
    ['a quoted column', { ...chunks, columns: ['a"b'] }, /option "columns" must be a plain SQL identifier/],
    ['a bad schema', { ...chunks, schema: 'my schema' }, /option "schema"/],
    ['no key', { ...chunks, key: [] }, /option "key" must be a non-empty array/],
    ['a key repeated in columns', { ...chunks, columns: ['id', 'body'] }, /must not repeat the key column "id"/],
    ['a column named twice', { ...chunks, columns: ['body', 'body'] }, /names the column "body" twice/],
  ])('refuses %s', (_, spec, message) => {
    expect(() => upsertSql(postgresDialect, spec as UpsertSpec)).toThrow(InvalidOptionError)
    expect(() => upsertSql(postgresDialect, spec as UpsertSpec)).toThrow(message)
  })

  it('refuses an unknown dialect and a row missing a column', () => {
    expect(() => upsertSql('mysql' as unknown as typeof postgresDialect, chunks)).toThrow(/"dialect" must be a store's SQL dialect: postgresDialect \(idem\/postgres\) or sqliteDialect \(idem\/sqlite\)/)
    expect(() => upsert(postgresDialect, {} as never, chunks, { id: 'x', doc: 'd', body: 'b' })).toThrow(/upsert: "client" must be a pg client or pool/)
    expect(() => upsertSql(sqliteDialect, chunks).values({ id: 'x', doc: 'd' })).toThrow(/no value for column "body" \(use null/)
  })
})

describe('upsert on SQLite (a real file)', () => {
  const files = testSqlite('idem-upsert')
  const db = files.open('upsert')
  db.exec('CREATE TABLE chunks (id TEXT PRIMARY KEY, doc TEXT NOT NULL, body TEXT)')
  afterAll(() => files.close())

  it('overwrites by content id: a replay leaves one row with the latest values', () => {
    const id = contentId.uuid('doc-1', 0)
    expect(db.transaction(() => upsert(sqliteDialect, db, chunks, { id, doc: 'doc-1', body: 'first' }))()).toBe(true)
    expect(db.transaction(() => upsert(sqliteDialect, db, chunks, { id, doc: 'doc-1', body: 'second' }))()).toBe(true)
    expect(db.prepare('SELECT id, doc, body FROM chunks WHERE id = ?').all(id)).toEqual([{ id, doc: 'doc-1', body: 'second' }])
  })

  it('with skipUnchanged, reports an identical replay as no write (NULLs included)', () => {
    const spec = { ...chunks, skipUnchanged: true }
    const id = contentId.uuid('doc-2', 0)
    expect(upsert(sqliteDialect, db, spec, { id, doc: 'doc-2', body: null })).toBe(true)
    expect(upsert(sqliteDialect, db, spec, { id, doc: 'doc-2', body: null })).toBe(false)
    expect(upsert(sqliteDialect, db, spec, { id, doc: 'doc-2', body: 'now set' })).toBe(true)
  })

  it('writes to a named (attached) database with "schema", skipUnchanged included', () => {
    const spec = { ...chunks, schema: 'main', skipUnchanged: true }
    const id = contentId.uuid('doc-3', 0)
    expect(upsert(sqliteDialect, db, spec, { id, doc: 'doc-3', body: 'x' })).toBe(true)
    expect(upsert(sqliteDialect, db, spec, { id, doc: 'doc-3', body: 'x' })).toBe(false)
  })

  it('names the missing table in the driver error rather than hiding it', () => {
    expect(() => upsert(sqliteDialect, db, { ...chunks, table: 'nope' }, { id: 'x', doc: 'd', body: 'b' })).toThrow(/no such table: nope/)
  })
})

const pgDb = await testSchema('idem_data_upsert')

describe.skipIf(pgDb === undefined)('upsert on Postgres (real Postgres)', () => {
  const { pool, schema } = pgDb as TestSchema
  const spec = { ...chunks, schema }
  beforeAll(() => pool.query(`CREATE TABLE "${schema}".chunks (id uuid PRIMARY KEY, doc text NOT NULL, body jsonb)`))
  afterAll(() => pgDb?.drop())

  it('overwrites by content id, inside the caller’s transaction', async () => {
    const id = contentId.uuid('doc-1', 0)
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      expect(await upsert(postgresDialect, client, spec, { id, doc: 'doc-1', body: { v: 1 } })).toBe(true)
      expect(await upsert(postgresDialect, client, spec, { id, doc: 'doc-1', body: { v: 2 } })).toBe(true)
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    const { rows } = await pool.query(`SELECT id, doc, body FROM "${schema}".chunks WHERE id = $1`, [id])
    expect(rows).toEqual([{ id, doc: 'doc-1', body: { v: 2 } }])
  })

  it('rolls back with the transaction', async () => {
    const id = contentId.uuid('doc-rolled-back', 0)
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await upsert(postgresDialect, client, spec, { id, doc: 'x', body: null })
      await client.query('ROLLBACK')
    } finally {
      client.release()
    }
    expect((await pool.query(`SELECT 1 FROM "${schema}".chunks WHERE id = $1`, [id])).rowCount).toBe(0)
  })

  it('with skipUnchanged, reports an identical replay as no write', async () => {
    const s = { ...spec, skipUnchanged: true }
    const id = contentId.uuid('doc-2', 0)
    expect(await upsert(postgresDialect, pool, s, { id, doc: 'doc-2', body: null })).toBe(true)
    expect(await upsert(postgresDialect, pool, s, { id, doc: 'doc-2', body: null })).toBe(false)
    expect(await upsert(postgresDialect, pool, s, { id, doc: 'doc-2', body: { changed: true } })).toBe(true)
  })

  it('keeps one row when many replays race', async () => {
    const id = contentId.uuid('doc-race', 0)
    await Promise.all(Array.from({ length: 16 }, (_, i) => upsert(postgresDialect, pool, spec, { id, doc: 'doc-race', body: { i } })))
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".chunks WHERE id = $1`, [id])
    expect(rows[0].n).toBe(1)
  })
})
