import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { killAfterWrite } from '../support/crash.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('idem_pg_crash')

describe.skipIf(db === undefined)('postgres: a process killed inside the function', () => {
  const { pool, schema } = db as TestSchema
  beforeAll(async () => {
    await postgresStore({ pool, schema }).migrate()
    await pool.query(`CREATE TABLE "${schema}".effects (id text NOT NULL)`)
  })
  afterAll(() => db?.drop())

  it('leaves no effect and no key, and the retry runs exactly once', async () => {
    const key = 'order-killed'
    await killAfterWrite(['postgres', PG_URL, schema, key])
    const rows = async (table: string, column: string) =>
      (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".${table} WHERE ${column} = $1`, [key])).rows[0].n
    expect(await rows('effects', 'id')).toBe(0)
    expect(await rows('idem_keys', 'key')).toBe(0)

    // The dead backend's advisory lock goes with its connection; the retry may wait for that.
    const idem = createIdem({ store: postgresStore({ pool, schema }), waitMs: 10_000 })
    let runs = 0
    const retry = () =>
      idem.run({ scope: 'crash', key, input: { key } }, async (tx) => {
        runs++
        await tx.query(`INSERT INTO "${schema}".effects (id) VALUES ($1)`, [key])
        return 'done'
      })
    expect(await retry()).toEqual({ value: 'done', replayed: false, stored: true })
    expect(await retry()).toEqual({ value: 'done', replayed: true, stored: true })
    expect(runs).toBe(1)
    expect(await rows('effects', 'id')).toBe(1)
    expect(await rows('idem_keys', 'key')).toBe(1)
  })
})
