import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLeasedIdem, deriveKey, type LeasedStore, type StepContext } from '../../src/index.js'
import { serializeOutcome } from '../../src/core/outcome.js'
import { leasedPostgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { withLeases } from '../support/leases.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { REDIS_URL, startFixture, testRedis } from './support.js'

const LEASE_MS = 300
const db = await testSchema('idem_leased_crash')
const redis = await testRedis('crash')

describe.skipIf(db === undefined)('a worker SIGKILLed between step 1 (the charge) and step 2', () => {
  const { pool, schema } = db as TestSchema
  beforeAll(async () => {
    await leasedPostgresStore({ pool, schema }).migrate()
    await pool.query(`CREATE TABLE "${schema}".charges (id bigserial PRIMARY KEY, idempotency_key text NOT NULL, amount integer NOT NULL)`)
    await pool.query(`CREATE TABLE "${schema}".shipments (order_key text NOT NULL, charge_id text NOT NULL)`)
  })
  afterAll(async () => {
    await redis?.drop()
    await db?.drop()
  })

  const stores: Array<[string, () => LeasedStore, object]> = [
    ['postgres', () => leasedPostgresStore({ pool, schema }), { store: 'postgres' }],
  ]
  if (redis !== undefined) {
    stores.unshift(['redis', () => redisStore({ client: redis.client, prefix: redis.prefix }), { store: 'redis', redisUrl: REDIS_URL, prefix: redis.prefix }])
  }

  for (const [kind, makeStore, storeConfig] of stores) {
    it(`${kind}: after the lease runs out the retry resumes at step 2; one charge; the outcome stored once`, async () => {
      const key = `order-${randomUUID()}`
      const worker = startFixture('crash-between-steps.mjs', { ...storeConfig, pgUrl: PG_URL, schema, key, leaseMs: LEASE_MS })
      const firstReceipt = JSON.parse(await worker.line('CHARGED'))
      worker.child.kill('SIGKILL')
      expect(await worker.exited).toBe('SIGKILL')

      // The client's retry reaches another worker (this process) with the same key.
      const inner = makeStore()
      const completions: boolean[] = []
      const store = withLeases(inner, (lease) => ({
        complete: async (outcome, ttlMs) => {
          const done = await lease.complete(outcome, ttlMs)
          completions.push(done)
          return done
        },
      }))
      const idem = createLeasedIdem({ store, leaseMs: LEASE_MS, waitMs: 10_000 })
      let charged = 0
      const body = async (ctx: StepContext) => {
        const receipt = await ctx.step('charge', async () => {
          charged++
          return { chargeId: 'ch_never', amount: 1000 }
        })
        const shipment = await ctx.step('ship', async () => {
          await pool.query(`INSERT INTO "${schema}".shipments (order_key, charge_id) VALUES ($1, $2)`, [key, receipt.chargeId])
          return { shippedWith: receipt.chargeId }
        })
        return { receipt, shipment }
      }
      const retry = await idem.run({ scope: 'crash', key, input: { amount: 1000 } }, body)
      expect(retry).toEqual({ value: { receipt: firstReceipt, shipment: { shippedWith: firstReceipt.chargeId } }, replayed: false, stored: true })
      expect(charged).toBe(0)

      const count = async (sql: string, value: string) => (await pool.query(sql, [value])).rows[0].n as number
      expect(await count(`SELECT count(*)::int AS n FROM "${schema}".charges WHERE idempotency_key = $1`, deriveKey('crash', key, 'charge'))).toBe(1)
      expect(await count(`SELECT count(*)::int AS n FROM "${schema}".shipments WHERE order_key = $1`, key)).toBe(1)

      expect(await idem.run({ scope: 'crash', key, input: { amount: 1000 } }, body)).toEqual({ ...retry, replayed: true })
      expect(completions).toEqual([true])
      expect(await inner.claim('crash', key, 'any', LEASE_MS, 60_000)).toEqual({
        state: 'completed',
        record: { fingerprint: expect.any(String), outcome: serializeOutcome(retry.value) },
      })
    })
  }
})
