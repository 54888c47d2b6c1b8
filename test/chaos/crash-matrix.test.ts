// The crash matrix: for each mode and each boundary inside a call, the service is
// SIGKILLed exactly there (the injection is a decorator of the store ports in the
// fixture), a new process is started, and the intent is retried with its key.
// Invariant: the effect exists exactly once, and every answer after the crash is the
// one outcome the effect belongs to (a replay when it was stored before the kill).
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { testDatabase } from '../support/mysql.js'
import { REDIS_URL, testRedis } from '../leased/support.js'
import { prepareMysql, prepareSchema, prepareSqlite, postOrder, sleep, startService, type Mode, type ServiceConfig } from './support/service.js'
import { report, scale } from './support/table.js'

const BOUNDARIES = ['after-claim', 'after-effect-write', 'after-step', 'before-commit', 'after-outcome-stored', 'after-commit-before-response'] as const
type Boundary = (typeof BOUNDARIES)[number]
const MODES: Mode[] = ['postgres', 'sqlite', 'mysql', 'leased-redis', 'leased-postgres']
const REPEATS = scale(1, 3)
const LEASE_MS = 400

// Where the outcome was stored before the process died, so the retry must be a replay.
const storedBefore: Record<Mode, ReadonlySet<Boundary>> = {
  postgres: new Set(['after-commit-before-response']),
  sqlite: new Set(['after-commit-before-response']),
  mysql: new Set(['after-commit-before-response']),
  'leased-redis': new Set(['after-outcome-stored', 'after-commit-before-response']),
  'leased-postgres': new Set(['after-outcome-stored', 'after-commit-before-response']),
}

const db = await testSchema('idem_chaos_crash')
const redis = await testRedis('chaos-crash')
const mysqlDb = await testDatabase('idem_chaos_crash', 4)
const dir = mkdtempSync(join(tmpdir(), 'idem-chaos-crash-'))
const sqliteFile = join(dir, 'chaos.db')

describe.skipIf(db === undefined)('crash matrix: SIGKILL at every boundary, restart, retry', () => {
  const { pool, schema } = db as TestSchema
  let sqlite: ReturnType<typeof prepareSqlite>
  beforeAll(async () => {
    await prepareSchema(pool, schema)
    sqlite = prepareSqlite(sqliteFile)
    if (mysqlDb !== undefined) await prepareMysql(mysqlDb.pool)
  })
  afterAll(async () => {
    sqlite?.close()
    await redis?.drop()
    await mysqlDb?.drop()
    await db?.drop()
    rmSync(dir, { recursive: true, force: true })
  })

  const configOf = (mode: Mode): ServiceConfig => ({
    mode,
    schema,
    pgUrl: PG_URL,
    sqliteFile,
    ...(mysqlDb === undefined ? {} : { mysqlUrl: mysqlDb.url }),
    redisUrl: REDIS_URL,
    prefix: redis?.prefix ?? 'idem-test:none:',
    leaseMs: LEASE_MS,
    // A retry waits out the dead holder's lease (or lock) and takes over.
    waitMs: 10_000,
  })

  /** The effects of an intent: order rows (transactional) or charges at the provider (leased). */
  async function effectsOf(mode: Mode, intent: string): Promise<{ ids: number[]; extra: number }> {
    if (mode === 'sqlite') {
      const ids = sqlite.prepare('SELECT id FROM orders WHERE intent = ?').all(intent).map((row) => (row as { id: number }).id)
      const shipments = (sqlite.prepare("SELECT count(*) AS n FROM idem_outbox WHERE dedupe_key = ?").get(`ship:${intent}`) as { n: number }).n
      return { ids, extra: shipments }
    }
    if (mode === 'mysql') {
      const [rows] = (await mysqlDb!.pool.query('SELECT id FROM orders WHERE intent = ?', [intent])) as unknown as [{ id: number }[]]
      const [shipments] = (await mysqlDb!.pool.query('SELECT COUNT(*) AS n FROM idem_outbox WHERE dedupe_key = ?', [`ship:${intent}`])) as unknown as [{ n: number }[]]
      return { ids: rows.map((row) => row.id), extra: Number(shipments[0]!.n) }
    }
    if (mode === 'postgres') {
      const { rows } = await pool.query(`SELECT id FROM "${schema}".orders WHERE intent = $1`, [intent])
      const shipments = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_outbox WHERE dedupe_key = $1`, [`ship:${intent}`])
      return { ids: rows.map((row) => row.id as number), extra: shipments.rows[0].n as number }
    }
    const { rows } = await pool.query(`SELECT id FROM "${schema}".charges WHERE intent = $1`, [intent])
    const calls = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".charge_calls c JOIN "${schema}".charges USING (idempotency_key) WHERE intent = $1`, [intent])
    return { ids: rows.map((row) => row.id as number), extra: calls.rows[0].n as number }
  }

  for (const mode of MODES) {
    it(`${mode}: ${BOUNDARIES.length} boundaries × ${REPEATS}`, async ({ task, skip }) => {
      if (mode === 'leased-redis' && redis === undefined) return skip('Redis is unreachable')
      if (mode === 'mysql' && mysqlDb === undefined) return skip('MySQL is unreachable')
      let duplicates = 0
      let lost = 0
      let unexpected = 0
      let maxRecoveryMs = 0
      let kills = 0
      let providerCalls = 0
      for (let round = 0; round < REPEATS; round++) {
        for (const boundary of BOUNDARIES) {
          const intent = randomUUID()
          const key = randomUUID()
          const amount = 100 + round
          const doomed = await startService({ ...configOf(mode), boundary })
          const attempt = await postOrder(doomed.url, key, intent, amount).then(
            (response) => `answered ${response.status}`,
            () => 'no answer',
          )
          expect(attempt, `${mode} ${boundary}`).toBe('no answer')
          expect(await doomed.fixture.exited).toBe('SIGKILL')
          expect(await doomed.fixture.line('KILLED')).toBe(boundary)
          kills++
          const killedAt = performance.now()

          // The restart: a new process, and the client's retry with the same key.
          const service = await startService(configOf(mode))
          let retried: Response | undefined
          for (let tries = 0; tries < 50 && retried === undefined; tries++) {
            const response = await postOrder(service.url, key, intent, amount)
            if (response.status === 409 || response.status === 503) await sleep(100)
            else retried = response
          }
          maxRecoveryMs = Math.max(maxRecoveryMs, performance.now() - killedAt)
          expect(retried?.status, `${mode} ${boundary}`).toBe(201)
          if (retried!.headers.get('x-chaos-unexpected')) unexpected++
          const first = await retried!.text()
          const again = await postOrder(service.url, key, intent, amount)
          const second = await again.text()
          await service.stop()

          const { ids, extra } = await effectsOf(mode, intent)
          if (ids.length > 1) duplicates += ids.length - 1
          if (ids.length === 0) lost++
          expect(ids, `${mode} ${boundary}: effects`).toHaveLength(1)
          const answer = JSON.parse(first) as { orderId?: number; chargeId?: number; intent: string }
          expect(answer.orderId ?? answer.chargeId, `${mode} ${boundary}: the answer names the one effect`).toBe(ids[0])
          expect(retried!.headers.get('idempotent-replayed') === 'true', `${mode} ${boundary}: replayed`).toBe(storedBefore[mode].has(boundary))
          expect(again.headers.get('idempotent-replayed')).toBe('true')
          expect(second).toBe(first)
          if (mode.startsWith('leased')) providerCalls += extra
          else expect(extra, `${mode} ${boundary}: the shipment queued once`).toBe(1)
        }
      }
      report(task, {
        scenario: `crash matrix: ${mode} (6 boundaries)`,
        runs: kills,
        unit: 'kills',
        duplicates,
        lost,
        unexpected5xx: unexpected,
        maxRecoveryMs,
        notes: mode.startsWith('leased')
          ? `${providerCalls} provider calls for ${kills} charges: repeats deduped by derive(key)`
          : 'the shipment queued once with each order',
      })
    }, 300_000)
  }
})
