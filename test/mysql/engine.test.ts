import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import mysql from 'mysql2/promise'
import { Registry } from 'prom-client'
import { createEventStream, createIdem, MigrationRequiredError, StoreUnavailableError } from '../../src/index.js'
import { prometheusMetrics } from '../../src/ops/prometheus.js'
import { mysqlStore, type MysqlExecutor, type MysqlPool, type MysqlStore } from '../../src/stores/mysql/index.js'
import { promValue } from '../support/metrics.js'
import { testDatabase, testPool, type TestDatabase } from '../support/mysql.js'

const db = await testDatabase('idem_mysql_engine', 40)
afterAll(() => db?.drop())

/** A gate the test opens: what holds a transaction open, instead of a sleep. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void
  const wait = new Promise<void>((resolve) => (open = resolve))
  return { wait, open }
}

// Sessions of this file's database inside the claim, waiting on a key's row lock (MariaDB's
// processlist shows the routine's INSERT, MySQL's the CALL; information_schema.innodb_trx,
// on MariaDB, does not always list the waiters).
const WAITING =
  "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE db = DATABASE() AND (info LIKE 'INSERT INTO idem_keys %' OR info LIKE 'CALL idem_keys_claim%')"

/** Polls `condition` until it holds (a hang guard of 20 s, never a timing assertion); when it never does, says what the database's sessions were doing. */
async function until(condition: () => Promise<boolean>): Promise<void> {
  for (const stop = Date.now() + 20_000; !(await condition()); ) {
    if (Date.now() > stop) {
      const { pool } = db as TestDatabase
      const [sessions] = await pool.query('SELECT command, state, info, time FROM information_schema.processlist WHERE db = DATABASE()')
      const [transactions] = await pool.query('SELECT trx_state, trx_query FROM information_schema.innodb_trx')
      throw new Error(`the condition never held; sessions ${JSON.stringify(sessions)}, transactions ${JSON.stringify(transactions)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe.skipIf(db === undefined)('mysql engine (MariaDB or MySQL, InnoDB)', () => {
  const { pool, database } = db as TestDatabase
  let store: MysqlStore
  beforeAll(async () => {
    store = mysqlStore({ pool })
    await store.migrate()
    await pool.query('CREATE TABLE effects (id VARCHAR(300) NOT NULL) ENGINE=InnoDB')
  })
  const count = async (id: string): Promise<number> => Number(((await pool.query('SELECT COUNT(*) AS n FROM effects WHERE id = ?', [id]))[0] as { n: number }[])[0]!.n)
  const insert = async (tx: MysqlExecutor, id: string): Promise<void> => void (await tx.query('INSERT INTO effects (id) VALUES (?)', [id]))

  it('migrate() is idempotent: a second run applies nothing', async () => {
    expect(await store.migrate()).toEqual({ from: 1, to: 1, applied: [] })
  })

  it('N concurrent duplicates in real transactions: the first runs while the others wait on its row lock, then all replay it', async () => {
    const idem = createIdem({ store, waitMs: 30_000 })
    const key = `dup-${randomUUID()}`
    const release = gate()
    const entered = gate()
    let runs = 0
    const fn = async (tx: MysqlExecutor) => {
      runs++
      await insert(tx, key)
      entered.open()
      await release.wait
      return { order: key }
    }
    const first = idem.run({ scope: 'acct', key, input: 1 }, fn)
    await entered.wait
    const duplicates = Array.from({ length: 20 }, () => idem.run({ scope: 'acct', key, input: 1 }, fn))
    // The duplicates queue on the first one's row lock in the database: wait until they all do.
    await until(async () => Number(((await pool.query(WAITING))[0] as { n: number }[])[0]!.n) === 20)
    expect(runs).toBe(1)
    release.open()
    const results = await Promise.all([first, ...duplicates])
    expect(runs).toBe(1)
    expect(results.filter((r) => !r.replayed)).toHaveLength(1)
    for (const result of results) expect(result.value).toEqual({ order: key })
    expect(await count(key)).toBe(1)
  })

  it('a fresh call of its own costs three statements: CALL idem_keys_open, the function\'s, CALL idem_keys_record', async () => {
    const sent: string[] = []
    const counted: MysqlPool = {
      query: (text, values) => pool.query(text, values),
      getConnection: async () => {
        const connection = await pool.getConnection()
        return Object.assign(Object.create(connection) as mysql.PoolConnection, {
          query: (text: string, values?: unknown[]) => {
            sent.push(text)
            return connection.query(text, values)
          },
        })
      },
    }
    const idem = createIdem({ store: mysqlStore({ pool: counted }) })
    const key = `trips-${randomUUID()}`
    expect(await idem.run({ scope: 'acct', key, input: 1 }, async (tx) => insert(tx, key))).toMatchObject({ replayed: false })
    expect(sent).toEqual(['CALL idem_keys_open(?, ?, ?, ?)', 'INSERT INTO effects (id) VALUES (?)', 'CALL idem_keys_record(?, ?, ?, ?, ?, ?)'])
    // The stored row is the record: fingerprint, outcome, expiry in the future.
    const [rows] = await pool.query("SELECT fingerprint <> '' AS recorded, expires_at > ? AS live FROM idem_keys WHERE scope = 'acct' AND `key` = ?", [Date.now(), key])
    expect(rows).toEqual([{ recorded: 1, live: 1 }])
  })

  it('concurrent claims of an expired key through other stores: one runs, the others replay it', async () => {
    const key = `expired-${randomUUID()}`
    await createIdem({ store }).run({ scope: 'acct', key, input: 1, ttlMs: 1 }, async () => 'old')
    await until(async () => Number(((await pool.query('SELECT COUNT(*) AS n FROM idem_keys WHERE `key` = ? AND expires_at < ?', [key, Date.now()]))[0] as { n: number }[])[0]!.n) === 1)
    let runs = 0
    // A store object each, so none reads the key first: every call claims it.
    const calls = Array.from({ length: 10 }, () =>
      createIdem({ store: mysqlStore({ pool }), waitMs: 30_000 }).run({ scope: 'acct', key, input: 1 }, async (tx) => {
        runs++
        await insert(tx, key)
        return 'new'
      }),
    )
    const results = await Promise.all(calls)
    expect(runs).toBe(1)
    expect(results.filter((r) => !r.replayed)).toHaveLength(1)
    for (const result of results) expect(result.value).toBe('new')
    expect(await count(key)).toBe(1)
  })

  it('keys and scopes compare byte for byte: case, accents, trailing spaces and composed forms are different identities', async () => {
    const idem = createIdem({ store, waitMs: 0 })
    const suffix = randomUUID().slice(0, 8)
    // Keys are visible ASCII: case is what can differ.
    const keys = [`a${suffix}`, `A${suffix}`]
    const scopes = ['café', 'CAFÉ', 'cafe', 'cafe\u0301', 'café ', 'café  ', 'café\t']
    for (const scope of scopes) {
      for (const key of keys) {
        const first = await idem.run({ scope, key, input: 1 }, async () => `${scope}|${key}`)
        expect(first.replayed, `${JSON.stringify(scope)} ${JSON.stringify(key)} ran`).toBe(false)
        const again = await idem.run({ scope, key, input: 1 }, async () => 'never')
        expect(again).toEqual({ value: `${scope}|${key}`, replayed: true, stored: true })
      }
    }
  })

  it('inbox ids and consumers compare byte for byte too: trailing spaces, case and accents are other messages', async () => {
    const suffix = randomUUID().slice(0, 8)
    const ids = [`m${suffix}`, `m${suffix} `, `M${suffix}`, `m${suffix}\u00e9`, `m${suffix}e\u0301`]
    for (const consumer of ['worker', 'worker ', 'Worker']) {
      for (const key of ids) {
        const first = await store.inbox.begin({ consumer, key, waitMs: 0, retentionMs: 60_000 })
        expect(first.state, `${JSON.stringify(consumer)} ${JSON.stringify(key)}`).toBe('new')
        await first.commit()
        expect((await store.inbox.begin({ consumer, key, waitMs: 0, retentionMs: 60_000 })).state).toBe('processed')
      }
    }
  })

  it('a scope longer than its column is refused, never cut short into another identity', async () => {
    const idem = createIdem({ store, waitMs: 0 })
    // 1024 characters pass idem's check; 2 bytes each in UTF-8 exceed VARBINARY(1024).
    const scope = 'é'.repeat(1024)
    await expect(idem.run({ scope, key: 'k', input: 1 }, async () => 'ran')).rejects.toThrow(/too long|Data too long/i)
  })

  it('a deadlock between two callers\' own transactions is StoreUnavailableError (503, retry), and InnoDB lets the other commit', async () => {
    const idem = createIdem({ store, waitMs: 30_000 })
    const [a, b] = [`dl-a-${randomUUID()}`, `dl-b-${randomUUID()}`]
    const bothHold = gate()
    let holding = 0
    const restored: number[] = []
    const crossing = async (first: string, second: string) => {
      const connection = await pool.getConnection()
      try {
        await connection.beginTransaction()
        await idem.run({ scope: 'acct', key: first, input: 1, tx: connection }, async (tx) => insert(tx, first))
        if (++holding === 2) bothHold.open()
        await bothHold.wait
        await idem.run({ scope: 'acct', key: second, input: 1, tx: connection }, async (tx) => insert(tx, second))
        await connection.commit()
      } catch (error) {
        await connection.rollback().catch(() => {})
        throw error
      } finally {
        // The claim set the session's lock wait for its statement: a deadlock in it leaves the session as it was.
        const [[session]] = (await connection.query('SELECT @@SESSION.innodb_lock_wait_timeout = @@GLOBAL.innodb_lock_wait_timeout AS restored')) as unknown as [[{ restored: number }]]
        restored.push(Number(session.restored))
        connection.release()
      }
    }
    const ends = await Promise.allSettled([crossing(a, b), crossing(b, a)])
    const refused = ends.filter((end) => end.status === 'rejected') as PromiseRejectedResult[]
    expect(refused).toHaveLength(1)
    expect(refused[0]!.reason).toBeInstanceOf(StoreUnavailableError)
    expect((refused[0]!.reason as Error & { cause: { errno: number } }).cause.errno).toBe(1213)
    expect((await count(a)) + (await count(b))).toBe(2)
    expect(restored).toEqual([1, 1])
  })

  it('a lock wait that runs out in the caller\'s transaction (innodb_lock_wait_timeout) is StoreUnavailableError', async () => {
    const subject = randomUUID()
    const holder = await pool.getConnection()
    const waiter = await pool.getConnection()
    try {
      await holder.beginTransaction()
      expect(await store.once.mark(holder, 'email', subject)).toBe(true)
      await waiter.query('SET SESSION innodb_lock_wait_timeout = 1')
      await waiter.beginTransaction()
      const refused = await store.once.mark(waiter, 'email', subject).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(StoreUnavailableError)
      expect((refused as Error & { cause: { errno: number } }).cause.errno).toBe(1205)
    } finally {
      await waiter.rollback()
      await waiter.query('SET SESSION innodb_lock_wait_timeout = DEFAULT')
      await holder.rollback()
      holder.release()
      waiter.release()
    }
  })

  it('a connection killed mid-transaction: the call fails with StoreUnavailableError, the row lock goes with it, and the retry runs once', async () => {
    const idem = createIdem({ store, waitMs: 0 })
    const key = `killed-${randomUUID()}`
    const admin = testPool(database, 1)
    try {
      const killed = idem.run({ scope: 'acct', key, input: 1 }, async (tx) => {
        await insert(tx, key)
        const [rows] = (await tx.query('SELECT CONNECTION_ID() AS id')) as [{ id: number }[], unknown]
        await admin.query('KILL ?', [rows[0]!.id])
        await insert(tx, `${key}-after`)
        return 'never stored'
      })
      await expect(killed).rejects.toBeInstanceOf(StoreUnavailableError)
      expect(await count(key)).toBe(0)
      // The server ends the killed thread and its transaction: the key is free again.
      let retried: unknown
      for (let attempt = 0; attempt < 100; attempt++) {
        retried = await idem.run({ scope: 'acct', key, input: 1 }, async (tx) => {
          await insert(tx, key)
          return 'retried'
        }).catch((error: unknown) => error)
        if ((retried as { replayed?: unknown }).replayed !== undefined) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      expect(retried).toEqual({ value: 'retried', replayed: false, stored: true })
      expect(await count(key)).toBe(1)
      expect(await count(`${key}-after`)).toBe(0)
    } finally {
      await admin.end()
    }
  })

  it('metrics: calls and store errors are counted under store "mysql", as for every store', async () => {
    const events = createEventStream()
    const registry = new Registry()
    prometheusMetrics({ registry, events, stores: ['mysql'] })
    const idem = createIdem({ store, waitMs: 0, events })
    const key = `metrics-${randomUUID()}`
    await idem.run({ scope: 'acct', key, input: 1 }, async () => 'ran')
    await idem.run({ scope: 'acct', key, input: 1 }, async () => 'never')
    // Nothing listens on port 1: connecting is refused at once.
    const closed = mysql.createPool({ uri: 'mysql://root@127.0.0.1:1/test', connectTimeout: 2_000 })
    const refused = createIdem({ store: mysqlStore({ pool: closed }), waitMs: 0, events }).run({ scope: 'acct', key, input: 1 }, async () => 'never')
    await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError)
    await closed.end()
    const text = await registry.metrics()
    expect(promValue(text, 'idem_calls_total', { engine: 'transactional', store: 'mysql', outcome: 'fresh' })).toBe(1)
    expect(promValue(text, 'idem_calls_total', { engine: 'transactional', store: 'mysql', outcome: 'replayed' })).toBe(1)
    expect(promValue(text, 'idem_store_errors_total', { store: 'mysql', operation: 'begin' })).toBe(1)
  })

  it('a database without idem\'s tables is MigrationRequiredError', async () => {
    const bare = await testDatabase('idem_mysql_bare', 2)
    try {
      const idem = createIdem({ store: mysqlStore({ pool: bare!.pool }), waitMs: 0 })
      await expect(idem.run({ scope: 'acct', key: 'k', input: 1 }, async () => 'ran')).rejects.toBeInstanceOf(MigrationRequiredError)
    } finally {
      await bare?.drop()
    }
  })

  it('prune() deletes expired records in batches and never a claim in flight', async () => {
    const idem = createIdem({ store, waitMs: 0 })
    const expired = `prune-${randomUUID()}`
    await idem.run({ scope: 'prune', key: expired, input: 1, ttlMs: 1 }, async () => 'short')
    const release = gate()
    const entered = gate()
    const held = idem.run({ scope: 'prune', key: `held-${expired}`, input: 1 }, async () => {
      entered.open()
      await release.wait
      return 'held'
    })
    await entered.wait
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(await store.prune({ batchSize: 1 })).toBeGreaterThanOrEqual(1)
    release.open()
    expect((await held).value).toBe('held')
    const [rows] = await pool.query("SELECT CONVERT(`key` USING utf8mb4) AS k FROM idem_keys WHERE scope = 'prune' AND `key` IN (?)", [[expired, `held-${expired}`]])
    expect(rows).toEqual([{ k: `held-${expired}` }])
  })
})
