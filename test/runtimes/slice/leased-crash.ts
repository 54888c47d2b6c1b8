// test/leased/crash.test.ts on the runtime: a worker (a process of the same runtime) is
// SIGKILLed after step 1 (the charge) was saved; after its lease runs out, the retry in
// this process resumes at step 2: one charge at the provider, the outcome stored once.
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import { createLeasedIdem, deriveKey, type LeasedStore, type StepContext } from 'idem'
import { leasedPostgresStore } from 'idem/postgres'
import { redisStore } from 'idem/redis'
import { REDIS_URL, testRedis } from '../../leased/support.js'
import { PG_URL, testSchema } from '../../support/postgres.js'
import type { SliceGroup } from './main.js'
import { SLICE_GROUPS } from './plan.js'
import { spawnOnRuntime } from './runtime.js'

// test/leased/crash.test.ts's 300 ms is too short here: a worker just started on Deno, its
// modules compiling and its first Postgres connection opening while it holds the key, was
// seen to go 300 ms without a confirmed renewal, and rightly gave up (LeaseLostError).
const LEASE_MS = 1_000
const FIXTURE = fileURLToPath(new URL('../../fixtures/crash-between-steps.mjs', import.meta.url))

/** Runs the fixture on this runtime until it prints `CHARGED <receipt>`, then kills it. */
async function chargeThenDie(config: object): Promise<unknown> {
  const child = spawnOnRuntime(FIXTURE, config)
  let out = ''
  let err = ''
  child.stderr.on('data', (chunk) => (err += chunk))
  const exited = new Promise<string | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)))
  const receipt = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      out += chunk
      const line = out.split('\n').find((l, i, all) => l.startsWith('CHARGED ') && i < all.length - 1)
      if (line !== undefined) resolve(line.slice('CHARGED '.length))
    })
    void exited.then((how) => reject(new Error(`the worker ended (${how}) before charging; stdout: ${out}; stderr: ${err}`)))
  })
  child.kill('SIGKILL')
  expect(await exited).toBe('SIGKILL')
  return JSON.parse(receipt)
}

export const leasedCrashGroup: SliceGroup = {
  name: SLICE_GROUPS.find((name) => name.startsWith('leased: '))!,
  async open() {
    const db = await testSchema('idem_runtime_crash')
    if (db === undefined) return { skipped: 'Postgres is unreachable' }
    const redis = await testRedis('runtime-crash')
    if (redis === undefined) {
      await db.drop()
      return { skipped: 'Redis is unreachable' }
    }
    const { pool, schema } = db
    await leasedPostgresStore({ pool, schema }).migrate()
    await pool.query(`CREATE TABLE "${schema}".charges (id bigserial PRIMARY KEY, idempotency_key text NOT NULL, amount integer NOT NULL)`)
    await pool.query(`CREATE TABLE "${schema}".shipments (order_key text NOT NULL, charge_id text NOT NULL)`)
    const count = async (sql: string, value: string) => (await pool.query(sql, [value])).rows[0].n as number

    const stores: Array<[string, () => LeasedStore, object]> = [
      ['redis', () => redisStore({ client: redis.client, prefix: redis.prefix }), { store: 'redis', redisUrl: REDIS_URL, prefix: redis.prefix }],
      ['postgres', () => leasedPostgresStore({ pool, schema }), { store: 'postgres' }],
    ]
    return {
      cases: stores.map(([kind, makeStore, storeConfig]) => ({
        name: `${kind}: after the lease runs out the retry resumes at step 2; one charge; the outcome stored once`,
        async run() {
          const key = `order-${randomUUID()}`
          const firstReceipt = (await chargeThenDie({ ...storeConfig, pgUrl: PG_URL, schema, key, leaseMs: LEASE_MS })) as { chargeId: string }
          const idem = createLeasedIdem({ store: makeStore(), leaseMs: LEASE_MS, waitMs: 10_000 })
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
          expect(await count(`SELECT count(*)::int AS n FROM "${schema}".charges WHERE idempotency_key = $1`, deriveKey('crash', key, 'charge'))).toBe(1)
          expect(await count(`SELECT count(*)::int AS n FROM "${schema}".shipments WHERE order_key = $1`, key)).toBe(1)
          expect(await idem.run({ scope: 'crash', key, input: { amount: 1000 } }, body)).toEqual({ ...retry, replayed: true })
        },
      })),
      async close() {
        await redis.drop()
        await db.drop()
      },
    }
  },
}
