import Database from 'better-sqlite3'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, createLeasedIdem, type LeaseClaim, type StepContext } from '../../src/index.js'
import { leasedPostgresStore } from '../../src/stores/postgres/index.js'
import { leasedSqliteStore, sqliteStore } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { latch, sleep } from './support.js'

const db = await testSchema('idem_leased_steps')

describe.skipIf(db === undefined)('postgres: a step commits in its own transaction', () => {
  const { pool, schema } = db as TestSchema
  beforeAll(async () => {
    await leasedPostgresStore({ pool, schema }).migrate()
    await pool.query(`CREATE TABLE "${schema}".effects (key text NOT NULL)`)
  })
  afterAll(() => db?.drop())

  it('so its result survives the rollback of the transaction it ran in the middle of', async () => {
    const idem = createLeasedIdem({ store: leasedPostgresStore({ pool, schema }), leaseMs: 300, waitMs: 10_000 })
    const key = `order-${randomUUID()}`
    let charges = 0
    const body = (fail: boolean) => async (ctx: StepContext) => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await client.query(`INSERT INTO "${schema}".effects (key) VALUES ($1)`, [key])
        const charge = await ctx.step('charge', async () => ({ id: `ch_${++charges}` }))
        if (fail) throw new Error('the rest of the work failed')
        await client.query('COMMIT')
        return charge
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    }
    await expect(idem.run({ scope: 'acct', key, input: 1 }, body(true))).rejects.toThrow('the rest of the work failed')
    const effects = async () => (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE key = $1`, [key])).rows[0].n
    expect(await effects()).toBe(0)
    // The retry waits out the lease (a failure with a completed step keeps the key) and resumes.
    expect(await idem.run({ scope: 'acct', key, input: 1 }, body(false))).toEqual({ value: { id: 'ch_1' }, replayed: false, stored: true })
    expect(charges).toBe(1)
    expect(await effects()).toBe(1)
  })
})

describe('sqlite: leased calls never join another transaction on their connection', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-leased-steps-'))
  const file = new Database(join(dir, 'shared.db'))
  file.pragma('journal_mode = WAL')
  const transactional = sqliteStore({ db: file })
  transactional.migrate()
  file.exec('CREATE TABLE effects (key TEXT NOT NULL)')
  afterAll(() => {
    file.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a claim made while an engine transaction is open lands on its own and survives that rollback', async () => {
    const leased = leasedSqliteStore({ db: file })
    const engine = createIdem({ store: transactional })
    const key = `k-${randomUUID()}`
    const hold = latch()
    const inside = latch()
    const failing = engine.run({ scope: 'acct', key: `tx-${key}`, input: 1 }, async (tx) => {
      tx.prepare('INSERT INTO effects (key) VALUES (?)').run(key)
      inside.open()
      await hold.wait
      throw new Error('roll the transaction back')
    })
    await inside.wait
    let claimed: LeaseClaim | undefined
    const claim = leased.claim('acct', key, 'fp', 10_000, 60_000).then((c) => (claimed = c))
    await sleep(50)
    expect(claimed).toBeUndefined() // it waits for the open transaction instead of joining it
    hold.open()
    await expect(failing).rejects.toThrow('roll the transaction back')
    await claim
    expect(claimed?.state).toBe('acquired')
    expect((file.prepare('SELECT count(*) AS n FROM effects WHERE key = ?').get(key) as { n: number }).n).toBe(0)
    expect(await leased.claim('acct', key, 'fp', 10_000, 60_000)).toEqual({ state: 'running', fingerprint: 'fp' })
  })

  it('a leased call gets its turn on a connection kept busy by engine calls', async () => {
    const leased = leasedSqliteStore({ db: file, busyTimeoutMs: 2_000 })
    const engine = createIdem({ store: transactional })
    let stop = false
    let calls = 0
    const callers = Array.from({ length: 8 }, async (_, caller) => {
      for (let i = 0; !stop; i++) {
        await engine.run({ scope: 'busy', key: `load-${randomUUID()}-${caller}-${i}`, input: i }, async () => {
          await sleep(1)
        })
        calls++
      }
    })
    try {
      await sleep(50)
      const before = calls
      const key = `k-${randomUUID()}`
      const claim = await leased.claim('acct', key, 'fp', 10_000, 60_000)
      if (claim.state !== 'acquired') throw new Error(`expected to acquire ${key}, got ${claim.state}`)
      expect(await claim.lease.complete('1', 60_000)).toBe(true)
      expect(calls).toBeGreaterThan(before)
    } finally {
      stop = true
      await Promise.all(callers)
    }
  })

  it('a step saved before a later transaction rolls back is kept, and the retry resumes after it', async () => {
    const idem = createLeasedIdem({ store: leasedSqliteStore({ db: file }), leaseMs: 200, waitMs: 10_000 })
    const key = `order-${randomUUID()}`
    let charges = 0
    const body = (fail: boolean) => async (ctx: StepContext) => {
      const charge = await ctx.step('charge', async () => ({ id: `ch_${++charges}` }))
      await transactional.transaction((tx) => {
        tx.prepare('INSERT INTO effects (key) VALUES (?)').run(key)
        if (fail) throw new Error('the effects failed')
      })
      return charge
    }
    await expect(idem.run({ scope: 'acct', key, input: 1 }, body(true))).rejects.toThrow('the effects failed')
    expect(await idem.run({ scope: 'acct', key, input: 1 }, body(false))).toEqual({ value: { id: 'ch_1' }, replayed: false, stored: true })
    expect(charges).toBe(1)
    expect((file.prepare('SELECT count(*) AS n FROM effects WHERE key = ?').get(key) as { n: number }).n).toBe(1)
  })
})
