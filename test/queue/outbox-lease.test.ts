// The outbox never sends one row twice at the same time: a delivery past its deadline
// is signalled to stop, and until it settles its dispatcher keeps the row leased, so no
// dispatcher (this one or another) can claim it; only a dead dispatcher's rows come
// back, once their lease has run out. Both dialects, real databases.
import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createDispatcher, createOutbox, type Dispatcher, type DispatcherOptions, type OutboxRow } from '../../src/queue/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { sqliteStore } from '../../src/stores/sqlite/index.js'
import { startFixture } from '../leased/support.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { eventually } from './support.js'

// Renewed every third of it: a pause of the test's process shorter than two thirds of a
// lease cannot let a second dispatcher in, so it is long enough for a loaded machine.
const LEASE_MS = 600
/** How long a deliverer that ignores its signal keeps "sending" after the signal fired. */
const HANG_MS = 3 * LEASE_MS
const NO_BACKOFF = { baseMs: 0, maxMs: 0 }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A row's lease as the database holds it, times in milliseconds of the database's clock. */
interface Lease {
  attempts: number
  lockedBy: string | null
  lockedUntil: number | null
  deliveredAt: number | null
  lastError: string | null
}

interface Dialect {
  name: string
  /** Where a dispatcher works: a second connection each time on SQLite, as another process would have. */
  target(): Pick<DispatcherOptions, 'store'>
  fill(keys: string[]): Promise<void>
  lease(dedupeKey: string): Promise<Lease>
  undelivered(): Promise<number>
  reset(): Promise<void>
  /** Hands a leased row to another claim, as a dispatcher that took it over would have it. */
  steal(dedupeKey: string): Promise<void>
  /** A target on a connection of its own, and a way to lose it (as a partition would). */
  cuttable(): { target: Pick<DispatcherOptions, 'store'>; cut(): Promise<void> }
  fixture: Record<string, unknown>
}

/**
 * Concurrent sends per row: entry increments, exit decrements, the most is kept. Also
 * the order of entries and exits, to compare attempts with each other.
 */
class Sends {
  readonly log: string[] = []
  readonly most = new Map<string, number>()
  readonly calls = new Map<string, number>()
  readonly #now = new Map<string, number>()

  async around(row: OutboxRow, work: () => Promise<void>): Promise<void> {
    const key = row.dedupeKey
    const now = (this.#now.get(key) ?? 0) + 1
    this.#now.set(key, now)
    this.most.set(key, Math.max(this.most.get(key) ?? 0, now))
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1)
    this.log.push(`start ${key} #${row.attempt}`)
    try {
      await work()
    } finally {
      this.#now.set(key, this.#now.get(key)! - 1)
      this.log.push(`end ${key} #${row.attempt}`)
    }
  }

  at(entry: string): number {
    const index = this.log.indexOf(entry)
    if (index < 0) throw new Error(`no "${entry}" in ${JSON.stringify(this.log)}`)
    return index
  }
}

/** Resolves true when `signal` fires, or false after `ms` if it never does (a dispatcher with no signal). */
function abortOf(signal: AbortSignal | undefined, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(true)
    const timer = setTimeout(() => resolve(false), ms)
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        resolve(true)
      },
      { once: true },
    )
  })
}

const pgDb = await testSchema('idem_q_outbox_lease', 12)
const dir = mkdtempSync(join(tmpdir(), 'idem-outbox-lease-'))
const sqliteFile = join(dir, 'outbox.db')
const sqliteConnections: Database.Database[] = []
function sqliteConnection(): Database.Database {
  const connection = new Database(sqliteFile)
  connection.pragma('journal_mode = WAL')
  sqliteConnections.push(connection)
  return connection
}
afterAll(async () => {
  for (const connection of sqliteConnections) connection.close()
  rmSync(dir, { recursive: true, force: true })
  await pgDb?.drop()
})

const dialects: Dialect[] = []
if (pgDb !== undefined) {
  const { pool, schema } = pgDb as TestSchema
  const outbox = createOutbox({ store: postgresStore({ pool, schema }) })
  const table = `"${schema}".idem_outbox`
  dialects.push({
    name: 'postgres',
    target: () => ({ store: postgresStore({ pool, schema }) }),
    async fill(keys) {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        for (const key of keys) await outbox.add(client, { topic: 'email', payload: { key }, dedupeKey: key })
        await client.query('COMMIT')
      } finally {
        client.release()
      }
    },
    async lease(dedupeKey) {
      const { rows } = await pool.query(
        `SELECT attempts, locked_by, last_error, (extract(epoch FROM locked_until) * 1000)::float8 AS locked_until, ` +
          `(extract(epoch FROM delivered_at) * 1000)::float8 AS delivered_at FROM ${table} WHERE dedupe_key = $1`,
        [dedupeKey],
      )
      const row = rows[0]
      return { attempts: row.attempts, lockedBy: row.locked_by, lockedUntil: row.locked_until, deliveredAt: row.delivered_at, lastError: row.last_error }
    },
    async undelivered() {
      return (await pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE delivered_at IS NULL`)).rows[0].n
    },
    async reset() {
      await pool.query(`TRUNCATE ${table}, "${schema}".idem_dead_letters`)
    },
    async steal(dedupeKey) {
      await pool.query(`UPDATE ${table} SET locked_by = 'thief' WHERE dedupe_key = $1`, [dedupeKey])
    },
    cuttable() {
      const own = new pg.Pool({ connectionString: PG_URL, max: 2, connectionTimeoutMillis: 10_000 })
      return { target: { store: postgresStore({ pool: own, schema }) }, cut: () => own.end() }
    },
    fixture: { kind: 'postgres', pgUrl: PG_URL, schema },
  })
}
{
  const main = sqliteConnection()
  const outbox = createOutbox({ store: sqliteStore({ db: main }) })
  dialects.push({
    name: 'sqlite',
    target: () => ({ store: sqliteStore({ db: sqliteConnection() }) }),
    async fill(keys) {
      main.transaction(() => {
        for (const key of keys) outbox.add(main, { topic: 'email', payload: { key }, dedupeKey: key })
      })()
    },
    async lease(dedupeKey) {
      const row = main
        .prepare('SELECT attempts, locked_by, locked_until, delivered_at, last_error FROM idem_outbox WHERE dedupe_key = ?')
        .get(dedupeKey) as { attempts: number; locked_by: string | null; locked_until: number | null; delivered_at: number | null; last_error: string | null }
      return { attempts: row.attempts, lockedBy: row.locked_by, lockedUntil: row.locked_until, deliveredAt: row.delivered_at, lastError: row.last_error }
    },
    async undelivered() {
      return (main.prepare('SELECT count(*) AS n FROM idem_outbox WHERE delivered_at IS NULL').get() as { n: number }).n
    },
    async reset() {
      main.exec('DELETE FROM idem_outbox; DELETE FROM idem_dead_letters')
    },
    async steal(dedupeKey) {
      main.prepare("UPDATE idem_outbox SET locked_by = 'thief' WHERE dedupe_key = ?").run(dedupeKey)
    },
    cuttable() {
      const own = new Database(sqliteFile)
      own.pragma('journal_mode = WAL')
      return { target: { store: sqliteStore({ db: own }) }, cut: async () => void own.close() }
    },
    fixture: { kind: 'sqlite', file: sqliteFile },
  })
}

for (const d of dialects) {
  describe(`the outbox lease on ${d.name}`, () => {
    beforeAll(async () => {
      if (d.name === 'postgres') await postgresStore({ pool: pgDb!.pool, schema: pgDb!.schema }).migrate()
      else sqliteStore({ db: sqliteConnection() }).migrate()
    })
    const running: Dispatcher[] = []
    beforeEach(() => d.reset())
    afterEach(async () => {
      await Promise.all(running.splice(0).map((dispatcher) => dispatcher.stop()))
    })

    it('two dispatchers, one delivery hung past its deadline ignoring the signal: never two sends of a row at once, and the rest keep flowing', async () => {
      const keys = Array.from({ length: 30 }, (_, i) => `row-${i}`)
      await d.fill(keys)
      const sends = new Sends()
      const hung: { atEntry?: Lease; atAbort?: Lease; beforeEnd?: Lease; aborted?: boolean; done?: boolean } = {}
      const deliver: DispatcherOptions['deliver'] = (row, context) =>
        sends.around(row, async () => {
          if (row.dedupeKey !== 'row-0' || row.attempt !== 1) return
          try {
            hung.atEntry = await d.lease('row-0')
            hung.aborted = await abortOf(context?.signal, 2 * LEASE_MS)
            hung.atAbort = await d.lease('row-0')
            // Ignores the signal and goes on "sending" for three leases.
            await sleep(HANG_MS)
            hung.beforeEnd = await d.lease('row-0')
          } finally {
            hung.done = true
          }
        })
      const options = { deliver, batchSize: 5, leaseMs: LEASE_MS, pollMs: 10, backoff: NO_BACKOFF }
      const a = createDispatcher({ ...d.target(), ...options })
      const b = createDispatcher({ ...d.target(), ...options })
      running.push(a, b)
      a.start()
      b.start()
      await eventually(() => hung.done === true, 20_000, 'the hung delivery to end')
      await eventually(async () => (await d.undelivered()) === 0, 20_000, 'every row delivered')
      await Promise.all([a.stop(), b.stop()])

      for (const key of keys) expect({ key, most: sends.most.get(key) }).toEqual({ key, most: 1 })
      // The hung row was never offered again: one attempt, delivered once it settled.
      expect(sends.calls.get('row-0')).toBe(1)
      expect(await d.lease('row-0')).toMatchObject({ attempts: 1, lockedBy: null })
      // The signal fired at the deadline, while the delivery was still running and its claim held the row.
      expect(hung.aborted).toBe(true)
      expect(hung.atAbort!.lockedBy).toBe(hung.atEntry!.lockedBy)
      // Past the deadline the claim kept renewing the row's lease.
      expect(hung.beforeEnd!.lockedBy).toBe(hung.atEntry!.lockedBy)
      expect(hung.beforeEnd!.lockedUntil!).toBeGreaterThan(hung.atEntry!.lockedUntil!)
      // Every other row was delivered, once, while the hung one was still sending.
      const hungEnded = sends.at('end row-0 #1')
      for (const key of keys.slice(1)) {
        expect(sends.calls.get(key)).toBe(1)
        expect(sends.at(`end ${key} #1`)).toBeLessThan(hungEnded)
      }
    })

    it('a deliverer that honours the signal is aborted at the deadline and retried only after its first attempt settled', async () => {
      // "prompt" gives up as soon as the signal fires; "cleanup" takes a moment to wind down first.
      await d.fill(['prompt', 'cleanup'])
      const sends = new Sends()
      const reasons = new Map<string, unknown>()
      const deliver: DispatcherOptions['deliver'] = (row, context) =>
        sends.around(row, async () => {
          if (row.attempt !== 1) return
          const aborted = await abortOf(context?.signal, 2 * LEASE_MS)
          if (!aborted) throw new Error('no signal within two leases')
          reasons.set(row.dedupeKey, context.signal.reason)
          if (row.dedupeKey === 'cleanup') await sleep(50)
          throw context.signal.reason
        })
      const options = { deliver, batchSize: 5, leaseMs: LEASE_MS, backoff: NO_BACKOFF }
      const a = createDispatcher({ ...d.target(), ...options })
      const b = createDispatcher({ ...d.target(), ...options })
      running.push(a, b)
      const rounds = []
      const deadline = Date.now() + 20_000
      while ((await d.undelivered()) > 0) {
        if (Date.now() > deadline) throw new Error(`rows still undelivered after 20 s: ${JSON.stringify(sends.log)}`)
        rounds.push(await a.runOnce(), await b.runOnce())
        await sleep(5)
      }
      await Promise.all([a.stop(), b.stop()])

      for (const key of ['prompt', 'cleanup']) {
        expect(sends.most.get(key)).toBe(1)
        expect(sends.at(`end ${key} #1`)).toBeLessThan(sends.at(`start ${key} #2`))
        expect(reasons.get(key)).toMatchObject({ name: 'TimeoutError' })
        expect(await d.lease(key)).toMatchObject({ attempts: 2, lockedBy: null })
      }
      // The first round: "prompt" settled at the signal and was recorded as a retry in the
      // round; "cleanup" was still winding down, so it stayed leased and was recorded later.
      expect(rounds[0]).toMatchObject({ claimed: 2, delivered: 0, retried: 1, overdue: 1 })
    })

    it('runOnce returns at the deadline with a hung delivery still leased; stop() waits for it and records its outcome', async () => {
      await d.fill(['hung'])
      let ended = false
      const dispatcher = createDispatcher({
        ...d.target(),
        batchSize: 1,
        leaseMs: LEASE_MS,
        backoff: NO_BACKOFF,
        deliver: async (row, context) => {
          if (row.dedupeKey !== 'hung') return
          await abortOf(context?.signal, 2 * LEASE_MS)
          await sleep(HANG_MS)
          ended = true
        },
      })
      const other = createDispatcher({ ...d.target(), leaseMs: LEASE_MS, deliver: async () => {} })
      running.push(dispatcher, other)
      const first = await dispatcher.runOnce()
      expect(first).toMatchObject({ claimed: 1, delivered: 0, retried: 0, overdue: 1 })
      expect(ended).toBe(false)
      // Still sending: the row stays with its claim, and no other dispatcher can take it.
      expect(await d.lease('hung')).toMatchObject({ attempts: 1, deliveredAt: null, lockedBy: expect.any(String) })
      expect((await other.runOnce()).claimed).toBe(0)
      // A hung delivery does not hold up the dispatcher's other rows, even at batchSize 1.
      await d.fill(['next'])
      expect(await dispatcher.runOnce()).toMatchObject({ claimed: 1, delivered: 1 })
      expect(ended).toBe(false)
      await dispatcher.stop()
      expect(ended).toBe(true)
      expect(await d.lease('hung')).toMatchObject({ attempts: 1, lockedBy: null, deliveredAt: expect.any(Number) })
    })

    it('a lease taken over while the delivery runs: the signal fires with a LeaseLostError, the loss is reported, the late outcome changes nothing', async () => {
      await d.fill(['stolen'])
      const reported: unknown[] = []
      let reason: unknown
      const dispatcher = createDispatcher({
        ...d.target(),
        leaseMs: LEASE_MS,
        onError: (error) => void reported.push(error),
        deliver: async (row, context) => {
          await d.steal(row.dedupeKey)
          // The next renewal, due well before the deadline, finds the row gone.
          await abortOf(context.signal, 2 * LEASE_MS)
          reason = context.signal.reason
        },
      })
      running.push(dispatcher)
      expect(await dispatcher.runOnce()).toMatchObject({ claimed: 1, delivered: 1 })
      expect(reason).toMatchObject({ name: 'LeaseLostError', message: expect.stringContaining('claimed by another dispatcher') })
      expect(reported).toEqual([reason])
      // Its outcome was written under a claim that no longer holds the row.
      expect(await d.lease('stolen')).toMatchObject({ lockedBy: 'thief', deliveredAt: null })
    })

    it('a dispatcher that cannot reach its database for a whole lease while a delivery still runs: the possible loss of the lease is reported', async () => {
      await d.fill(['cut'])
      const { target, cut } = d.cuttable()
      const reported: unknown[] = []
      const reasons: unknown[] = []
      let settle!: () => void
      const dispatcher = createDispatcher({
        ...target,
        leaseMs: LEASE_MS,
        onError: (error) => void reported.push(error),
        deliver: async (_row, context) => {
          context.signal.addEventListener('abort', () => reasons.push(context.signal.reason))
          await cut()
          await new Promise<void>((resolve) => (settle = resolve))
        },
      })
      expect(await dispatcher.runOnce()).toMatchObject({ claimed: 1, overdue: 1 })
      await eventually(() => reported.some((error) => (error as Error).name === 'LeaseLostError'), 10_000, 'the lease loss to be reported')
      // The deadline fired the signal first; the loss is reported all the same.
      expect(reasons).toMatchObject([{ name: 'TimeoutError' }])
      expect(reported.find((error) => (error as Error).name === 'LeaseLostError')).toMatchObject({ message: expect.stringContaining('could not be renewed') })
      settle()
      await dispatcher.stop()
    })

    it('a dispatcher killed (SIGKILL) mid-delivery: its row is claimed again only once the lease it last renewed has run out', async () => {
      await d.fill(['crash'])
      const worker = startFixture('dispatcher-crash.mjs', { ...d.fixture, leaseMs: LEASE_MS })
      let claimed: Lease
      try {
        expect(JSON.parse(await worker.line('SENDING'))).toMatchObject({ attempt: 1 })
        claimed = await d.lease('crash')
        const round = JSON.parse(await worker.line('ROUND'))
        // Past the deadline: the signal fired, and the row is still the worker's.
        expect(round).toMatchObject({ aborted: true, result: { claimed: 1, delivered: 0, retried: 0, overdue: 1 } })
        expect(await d.lease('crash')).toMatchObject({ lockedBy: claimed.lockedBy, deliveredAt: null })
        await eventually(async () => (await d.lease('crash')).lockedUntil! > claimed.lockedUntil!, 10_000, 'the worker to renew its lease')
      } finally {
        worker.child.kill('SIGKILL')
      }
      expect(await worker.exited).toBe('SIGKILL')
      const last = await d.lease('crash')
      expect(last).toMatchObject({ attempts: 1, lockedBy: claimed.lockedBy, deliveredAt: null })

      const taken: Lease[] = []
      const dispatcher = createDispatcher({
        ...d.target(),
        leaseMs: LEASE_MS,
        deliver: async (row) => {
          expect(row.attempt).toBe(2)
          taken.push(await d.lease('crash'))
        },
      })
      running.push(dispatcher)
      await eventually(async () => (await dispatcher.runOnce()).delivered === 1, 10_000, 'the row to be claimed again')
      expect(taken).toHaveLength(1)
      // A claim sets locked_until to its own time plus the lease: it came no sooner than the dead worker's lease ended.
      expect(taken[0]!.lockedUntil! - LEASE_MS).toBeGreaterThanOrEqual(last.lockedUntil! - 0.01)
      expect(taken[0]!.lockedBy).not.toBe(last.lockedBy)
      expect(await d.lease('crash')).toMatchObject({ attempts: 2, lockedBy: null, deliveredAt: expect.any(Number) })
    })
  })
}
