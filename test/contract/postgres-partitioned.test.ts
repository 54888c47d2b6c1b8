// The Postgres key table partitioned by expiry day (keyLayout 'daily-partitions'): the
// KeyStore contract passes on it unchanged; migrate() and prune() create the days
// ahead; prune() drops a day once it is over, live keys untouched; a key expiring past
// the days made lands in the DEFAULT partition, replays, and is pruned by deletes;
// `idem migrate|prune --key-layout` do the same.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli/idem.js'
import { createIdem } from '../../src/core/engine.js'
import { postgresStore, type PgClient, type PostgresStore } from '../../src/stores/postgres/index.js'
import { keyStoreContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'

const db = await testSchema('idem_partitioned', 20)

describe.skipIf(db === undefined)('postgres keys partitioned by expiry day', () => {
  const { pool, schema } = db as TestSchema
  let store: PostgresStore
  const down: pg.Pool[] = []
  beforeAll(async () => {
    store = postgresStore({ pool, schema, keyLayout: 'daily-partitions', partitionDaysAhead: 3 })
    await store.migrate()
    await pool.query(`CREATE TABLE "${schema}".effects (id text NOT NULL)`)
  })
  afterAll(async () => {
    for (const p of down) await p.end()
    await db?.drop()
  })
  const partitions = async (): Promise<string[]> =>
    (
      await pool.query(
        `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1) AND c.relname <> 'idem_keys_by_day_later' ORDER BY 1`,
        [`"${schema}".idem_keys_by_day`],
      )
    ).rows.map((r) => r.relname as string)
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '')

  describe('keys (KeyStore)', () =>
    itFulfils(
      keyStoreContract(() => ({
        store,
        writeEffect: async (tx: PgClient, id: string) => void (await tx.query(`INSERT INTO "${schema}".effects (id) VALUES ($1)`, [id])),
        countEffects: async (id: string) => (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE id = $1`, [id])).rows[0].n as number,
        unavailableStore: () => {
          const closed = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2_000 })
          down.push(closed)
          return postgresStore({ pool: closed, schema, keyLayout: 'daily-partitions' })
        },
      })),
    ))

  it('keeps each key in the partition of the day it expires, and nothing in idem_keys', async () => {
    const idem = createIdem({ store })
    const key = randomUUID()
    await idem.run({ scope: 'acct', key, input: 1, ttlMs: 2 * 86_400_000 }, async () => 'two days')
    const { rows } = await pool.query(
      `SELECT c.relname AS part FROM "${schema}".idem_keys_by_day AS k JOIN pg_class AS c ON c.oid = k.tableoid WHERE k.key = $1`,
      [key],
    )
    expect(rows).toEqual([{ part: `idem_keys_by_day_${day(2)}` }])
    expect((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys WHERE key = $1`, [key])).rows[0].n).toBe(0)
  })

  it('prune drops the days that are over (their keys all expired) and creates the days ahead; live keys stay', async () => {
    const before = await partitions()
    expect(before).toEqual([0, 1, 2, 3].map((d) => `idem_keys_by_day_${day(d)}`))
    // Two days ago, as a partition made then would be, with a key that expired then.
    const old = `idem_keys_by_day_${day(-2)}`
    const from = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10)
    const to = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)
    await pool.query(`CREATE TABLE "${schema}"."${old}" PARTITION OF "${schema}".idem_keys_by_day FOR VALUES FROM ('${from} 00:00+00') TO ('${to} 00:00+00')`)
    await pool.query(`INSERT INTO "${schema}".idem_keys_by_day (scope, key, fingerprint, outcome, expires_at) VALUES ('acct', 'gone', 'fp', 'null', '${from} 12:00+00')`)
    await pool.query(`ANALYZE "${schema}"."${old}"`)
    const wider = postgresStore({ pool, schema, keyLayout: 'daily-partitions', partitionDaysAhead: 5 })
    expect(await wider.prune()).toBeGreaterThanOrEqual(1)
    expect(await partitions()).toEqual([0, 1, 2, 3, 4, 5].map((d) => `idem_keys_by_day_${day(d)}`))
    const idem = createIdem({ store })
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys_by_day`)
    expect(rows[0].n).toBeGreaterThan(0)
    expect((await idem.run({ scope: 'acct', key: 'gone', input: 1 }, async () => 'new again')).replayed).toBe(false)
  })

  it('a key expiring past the days made ahead lands in the DEFAULT partition, replays, and is pruned once expired', async () => {
    const idem = createIdem({ store })
    const key = randomUUID()
    await idem.run({ scope: 'acct', key, input: 1, ttlMs: 20 * 86_400_000 }, async () => 'far')
    expect(await idem.run({ scope: 'acct', key, input: 1 }, async () => 'never')).toEqual({ value: 'far', replayed: true, stored: true })
    const where = await pool.query(
      `SELECT c.relname AS part FROM "${schema}".idem_keys_by_day AS k JOIN pg_class AS c ON c.oid = k.tableoid WHERE k.key = $1`,
      [key],
    )
    expect(where.rows).toEqual([{ part: 'idem_keys_by_day_later' }])
    // 20 days on, as it will be: expired, on a day that has no partition of its own.
    await pool.query(`UPDATE "${schema}".idem_keys_by_day_later SET expires_at = now() - interval '5 days' WHERE key = $1`, [key])
    expect(await store.prune({ batchSize: 10 })).toBeGreaterThanOrEqual(1)
    expect((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys_by_day WHERE key = $1`, [key])).rows[0].n).toBe(0)
  })

  it('idem migrate and idem prune --key-layout daily-partitions create the days ahead; options are checked', async () => {
    const other = `${schema}_cli`
    const out: string[] = []
    const io = { out: (line: string) => void out.push(line), err: (line: string) => void out.push(line) }
    try {
      expect(await main(['migrate', '--postgres', PG_URL, '--schema', other, '--key-layout', 'daily-partitions'], io)).toBe(0)
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = to_regclass($1)`, [`"${other}".idem_keys_by_day`])
      expect(rows[0].n).toBe(5) // today, three days ahead, and the DEFAULT partition
      expect(await main(['prune', '--postgres', PG_URL, '--schema', other, '--key-layout', 'daily-partitions'], io)).toBe(0)
      expect(await main(['prune', '--postgres', PG_URL, '--schema', other, '--key-layout', 'weekly'], io)).toBe(2)
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${other}" CASCADE`)
    }
    expect(() => postgresStore({ pool, schema, keyLayout: 'monthly' as never })).toThrow(/"keyLayout"/)
    expect(() => postgresStore({ pool, schema, partitionDaysAhead: 0 })).toThrow(/"partitionDaysAhead"/)
  })
})
