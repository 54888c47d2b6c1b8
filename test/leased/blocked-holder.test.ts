// A holder whose event loop is blocked longer than its lease never lets its heartbeat's
// timers fire; meanwhile another process takes the key over and completes it. When the
// holder wakes it must start nothing new: its next step throws LeaseLostError at once,
// and ctx.signal read then is already aborted, checked against the clock rather than
// left to a timer.
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLeasedIdem, LeaseLostError, type LeasedStore } from '../../src/index.js'
import { leasedPostgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { REDIS_URL, testRedis } from './support.js'

const LEASE_MS = 300
const takeover = fileURLToPath(new URL('../fixtures/takeover.mjs', import.meta.url))
const db = await testSchema('idem_leased_blocked')
const redis = await testRedis('blocked')

describe.skipIf(db === undefined)('a holder blocked past its lease', () => {
  const { pool, schema } = db as TestSchema
  beforeAll(async () => {
    await leasedPostgresStore({ pool, schema }).migrate()
    await pool.query(`CREATE TABLE "${schema}".emails (key text NOT NULL, sent_by text NOT NULL)`)
  })
  afterAll(async () => {
    await redis?.drop()
    await db?.drop()
  })

  const stores: Array<[string, () => LeasedStore, object]> = [['postgres', () => leasedPostgresStore({ pool, schema }), { store: 'postgres' }]]
  if (redis !== undefined) {
    stores.unshift(['redis', () => redisStore({ client: redis.client, prefix: redis.prefix }), { store: 'redis', redisUrl: REDIS_URL, prefix: redis.prefix }])
  } else if (process.env.CI) {
    throw new Error('Redis is required in CI')
  }

  /** Blocks this process's event loop while another process takes `key` over and completes it. */
  function blockedWhileTakenOver(storeConfig: object, key: string): void {
    const out = execFileSync(process.execPath, [takeover, JSON.stringify({ ...storeConfig, pgUrl: PG_URL, schema, key, afterMs: LEASE_MS * 2 })], {
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect(out).toContain('RESULT {"value":{"by":"taker"},"replayed":false,"stored":true}')
  }

  async function emails(key: string): Promise<string[]> {
    const { rows } = await pool.query(`SELECT sent_by FROM "${schema}".emails WHERE key = $1`, [key])
    return rows.map((row) => row.sent_by as string)
  }

  for (const [kind, makeStore, storeConfig] of stores) {
    it(`${kind}: the next step throws LeaseLostError without running, and the taker's outcome stands`, async () => {
      const key = `order-${randomUUID()}`
      const idem = createLeasedIdem({ store: makeStore(), leaseMs: LEASE_MS })
      let ranAfterWaking = false
      const run = idem.run({ scope: 'blocked', key, input: { amount: 1000 } }, async (ctx) => {
        await ctx.step('charge', async () => ({ chargeId: 'ch_1' }))
        blockedWhileTakenOver(storeConfig, key)
        await ctx.step('email', async () => {
          ranAfterWaking = true
          await pool.query(`INSERT INTO "${schema}".emails (key, sent_by) VALUES ($1, 'blocked holder')`, [key])
        })
        return { by: 'blocked holder' }
      })
      await expect(run).rejects.toBeInstanceOf(LeaseLostError)
      expect(ranAfterWaking).toBe(false)
      expect(await emails(key)).toEqual(['taker'])
      const replay = await idem.run({ scope: 'blocked', key, input: { amount: 1000 } }, async () => ({ by: 'never' }))
      expect(replay).toEqual({ value: { by: 'taker' }, replayed: true, stored: true })
    })

    it(`${kind}: ctx.signal read after the block is already aborted, so fetch with it sends nothing`, async () => {
      const key = `order-${randomUUID()}`
      const idem = createLeasedIdem({ store: makeStore(), leaseMs: LEASE_MS })
      let requests = 0
      let abortedWhenRead = false
      const server = createServer((_req, res) => {
        requests++
        res.end('sent')
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/email`
      try {
        const run = idem.run({ scope: 'blocked', key, input: { amount: 1000 } }, async (ctx) => {
          await ctx.step('charge', async () => ({ chargeId: 'ch_1' }))
          blockedWhileTakenOver(storeConfig, key)
          // Read before anything awaits, so no timer had a chance to abort it.
          const signal = ctx.signal
          abortedWhenRead = signal.aborted
          await fetch(url, { method: 'POST', signal })
          return { by: 'blocked holder' }
        })
        await expect(run).rejects.toBeInstanceOf(LeaseLostError)
        expect(abortedWhenRead).toBe(true)
        expect(requests).toBe(0)
        expect(await emails(key)).toEqual(['taker'])
      } finally {
        server.close()
      }
    })
  }
})
