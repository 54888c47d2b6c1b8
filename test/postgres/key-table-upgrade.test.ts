import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, FingerprintMismatchError, InFlightError, MigrationRequiredError } from '../../src/index.js'
import { postgresStore, SCHEMA_VERSION, type PgClient } from '../../src/stores/postgres/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { migrateToPrevious, PREVIOUS_VERSION, previousStore } from './previous-version.js'

// Migration 7 (the key table's v-next) on a schema the previous version made and wrote:
// its rows replay, and instances of both versions serve one schema side by side, as in a
// rolling deploy.

const db = await testSchema('idem_pg_upgrade')
afterAll(() => db?.drop())

/** A promise and the function that settles it: what a held call waits on. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

describe.skipIf(db === undefined)('the key table upgraded from version 6 to 7', () => {
  const { pool, schema: base } = db as TestSchema
  let n = 0

  /** Resolves once a claim on `schema` is waiting for a key's advisory lock. */
  async function claimWaiting(schema: string): Promise<void> {
    for (let i = 0; i < 2_000; i++) {
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'advisory' AND query LIKE $1`,
        [`%"${schema}".%claim%`],
      )
      if (rows[0].n > 0) return
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    throw new Error('no claim ever waited for the lock')
  }

  describe.each(['table', 'daily-partitions'] as const)('keyLayout %s', (keyLayout) => {
    const schema = `${base}_${keyLayout === 'table' ? 't' : 'd'}`
    const effects = `"${schema}".effects`
    const effectCount = async (id: string): Promise<number> => (await pool.query(`SELECT count(*)::int AS n FROM ${effects} WHERE id = $1`, [id])).rows[0].n
    const record = (id: string) => async (tx: PgClient) => {
      await tx.query(`INSERT INTO ${effects} (id) VALUES ($1)`, [id])
      return { id }
    }
    const never = (): never => {
      throw new Error('a replay ran the function')
    }
    const old = createIdem({ store: previousStore(pool, schema, keyLayout) })
    const store = postgresStore({ pool, schema, keyLayout })
    const idem = createIdem({ store })
    afterAll(() => pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))

    // Keys the previous version recorded, one with a fingerprint and an outcome of any characters; then the migration.
    const keys = Array.from({ length: 5 }, (_, i) => `before-${i}`)
    let migrated: unknown
    beforeAll(async () => {
      await pool.query(`CREATE SCHEMA "${schema}"`)
      await migrateToPrevious(pool, schema, keyLayout)
      await pool.query(`CREATE TABLE ${effects} (id text NOT NULL)`)
      for (const key of keys) await old.run({ scope: 'acct', key, input: { key } }, record(key))
      await old.run({ scope: 'acct', key: 'odd', fingerprint: '12:ab:😀:\u00e9' }, async () => ({ text: '7:x😀"\\' }))
      migrated = await store.migrate()
    })

    it('keys the previous version recorded replay after the migration, and their fingerprint still decides', async () => {
      expect(migrated).toEqual({ from: PREVIOUS_VERSION, to: SCHEMA_VERSION, applied: [7] })

      for (const key of keys) {
        expect(await idem.run({ scope: 'acct', key, input: { key } }, never)).toMatchObject({ replayed: true, value: { id: key } })
        await expect(idem.run({ scope: 'acct', key, input: { key: 'another' } }, never)).rejects.toBeInstanceOf(FingerprintMismatchError)
        expect(await effectCount(key)).toBe(1)
      }
      expect(await idem.run({ scope: 'acct', key: 'odd', fingerprint: '12:ab:😀:\u00e9' }, never)).toMatchObject({ replayed: true, value: { text: '7:x😀"\\' } })
      await expect(idem.run({ scope: 'acct', key: 'odd', fingerprint: '12:ab:😀:\u00e8' }, never)).rejects.toBeInstanceOf(FingerprintMismatchError)
    })

    it('instances of both versions on one schema replay each other\'s keys', async () => {
      const mine = `new-${++n}`
      const theirs = `old-${++n}`
      await idem.run({ scope: 'acct', key: mine, input: 1 }, record(mine))
      await old.run({ scope: 'acct', key: theirs, input: 1 }, record(theirs))
      expect(await old.run({ scope: 'acct', key: mine, input: 1 }, never)).toMatchObject({ replayed: true, value: { id: mine } })
      expect(await idem.run({ scope: 'acct', key: theirs, input: 1 }, never)).toMatchObject({ replayed: true, value: { id: theirs } })
      await expect(old.run({ scope: 'acct', key: mine, input: 2 }, never)).rejects.toBeInstanceOf(FingerprintMismatchError)
      expect([await effectCount(mine), await effectCount(theirs)]).toEqual([1, 1])
    })

    it.each([
      ['the previous version holds a key', 'old'],
      ['this version holds a key', 'new'],
    ] as const)('%s: it is in flight for the other, which then replays it, once waiting for it', async (_, holder) => {
      const [first, second] = holder === 'old' ? [old, idem] : [idem, old]
      const key = `held-${++n}`
      const held = gate()
      const running = gate()
      const firstCall = first.run({ scope: 'acct', key, input: 1 }, async (tx) => {
        running.open()
        await held.opened
        return record(key)(tx)
      })
      await running.opened
      await expect(second.run({ scope: 'acct', key, input: 1, waitMs: 0 }, never)).rejects.toBeInstanceOf(InFlightError)
      const waiting = second.run({ scope: 'acct', key, input: 1, waitMs: 30_000 }, never)
      await claimWaiting(schema)
      held.open()
      expect(await firstCall).toMatchObject({ replayed: false })
      expect(await waiting).toMatchObject({ replayed: true, value: { id: key } })
      expect(await effectCount(key)).toBe(1)
    })
  })

  it('this version on a schema still at version 6 is MigrationRequiredError naming the schema, and nothing runs', async () => {
    const schema = `${base}_v6`
    await pool.query(`CREATE SCHEMA "${schema}"`)
    try {
      await migrateToPrevious(pool, schema, 'table')
      let ran = false
      const call = createIdem({ store: postgresStore({ pool, schema }) }).run({ scope: 'acct', key: 'k', input: 1 }, () => {
        ran = true
      })
      await expect(call).rejects.toBeInstanceOf(MigrationRequiredError)
      await expect(call).rejects.toThrow(`schema "${schema}"`)
      expect(ran).toBe(false)
    } finally {
      await pool.query(`DROP SCHEMA "${schema}" CASCADE`)
    }
  })

  it('migration 7 drops idem_keys\' BRIN index; behind a transaction holding the table it fails after its lock timeout, applies nothing, and applies once run again', async () => {
    const schema = `${base}_lock`
    const s = `"${schema}"`
    await pool.query(`CREATE SCHEMA ${s}`)
    const holder = await pool.connect()
    try {
      await migrateToPrevious(pool, schema, 'table')
      const index = async (): Promise<boolean> => (await pool.query(`SELECT to_regclass('${s}.idem_keys_expires_at') IS NOT NULL AS present`)).rows[0].present
      expect(await index()).toBe(true)
      await holder.query('BEGIN')
      await holder.query(`SELECT count(*) FROM ${s}.idem_keys`)
      await expect(postgresStore({ pool, schema }).migrate()).rejects.toMatchObject({ code: '55P03' })
      const versions = await pool.query(`SELECT max(version) AS v FROM ${s}.idem_migrations`)
      expect(versions.rows[0].v).toBe(PREVIOUS_VERSION)
      expect(await index()).toBe(true)
      await holder.query('COMMIT')
      expect(await postgresStore({ pool, schema }).migrate()).toMatchObject({ applied: [7] })
      expect(await index()).toBe(false)
    } finally {
      // Whatever failed, the holder's transaction ends before its schema is dropped.
      await holder.query('ROLLBACK')
      holder.release()
      await pool.query(`DROP SCHEMA ${s} CASCADE`)
    }
  })
})
