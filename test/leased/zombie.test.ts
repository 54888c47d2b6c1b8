import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLeasedIdem, deriveKey, type LeasedStore } from '../../src/index.js'
import { leasedPostgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { REDIS_URL, startFixture, testRedis } from './support.js'

const LEASE_MS = 300
const db = await testSchema('idem_leased_zombie')
const redis = await testRedis('zombie')

describe.skipIf(db === undefined)('a paused "zombie" holder wakes after a takeover', () => {
  const { pool, schema } = db as TestSchema
  beforeAll(async () => {
    await leasedPostgresStore({ pool, schema }).migrate()
    await pool.query(`CREATE TABLE "${schema}".charges (id bigserial PRIMARY KEY, idempotency_key text NOT NULL, amount integer NOT NULL)`)
  })
  afterAll(async () => {
    await redis?.drop()
    await db?.drop()
  })

  const stores: Array<[string, () => LeasedStore, object]> = [['postgres', () => leasedPostgresStore({ pool, schema }), { store: 'postgres' }]]
  if (redis !== undefined) {
    stores.unshift(['redis', () => redisStore({ client: redis.client, prefix: redis.prefix }), { store: 'redis', redisUrl: REDIS_URL, prefix: redis.prefix }])
  }

  for (const [kind, makeStore, storeConfig] of stores) {
    it(`${kind}: its completion is refused by the fencing token and the survivor's outcome stands`, async () => {
      const key = `order-${randomUUID()}`
      const zombie = startFixture('zombie-holder.mjs', { ...storeConfig, pgUrl: PG_URL, schema, key, leaseMs: LEASE_MS })
      await zombie.line('HOLDING')
      // A real pause: no heartbeat, no timers, nothing runs in the holder until SIGCONT.
      zombie.child.kill('SIGSTOP')
      try {
        const survivor = createLeasedIdem({ store: makeStore(), leaseMs: 10_000, waitMs: 10_000 })
        let charged = 0
        const result = await survivor.run({ scope: 'zombie', key, input: { amount: 1000 } }, async (ctx) => {
          const charge = await ctx.step('charge', async () => {
            charged++
            return { chargeId: 'ch_never' }
          })
          return { by: 'survivor', charge }
        })
        expect(result.replayed).toBe(false)
        expect(result.value.by).toBe('survivor')
        expect(charged).toBe(0) // the zombie's charge was resumed, not repeated

        zombie.child.kill('SIGCONT')
        zombie.child.stdin.write('WAKE\n')
        const reported = JSON.parse(await zombie.line('ERROR'))
        expect(reported).toMatchObject({ name: 'LeaseLostError', code: 'lease-lost' })
        expect(reported.message).toMatch(/not stored: another call took the key over/)
        expect(await zombie.exited).toBe(0)

        expect(await survivor.run({ scope: 'zombie', key, input: { amount: 1000 } }, async () => ({ by: 'never' }))).toEqual({
          ...result,
          replayed: true,
        })
        const charges = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".charges WHERE idempotency_key = $1`, [deriveKey('zombie', key, 'charge')])
        expect(charges.rows[0].n).toBe(1)
      } finally {
        zombie.child.kill('SIGKILL')
      }
    })
  }
})
