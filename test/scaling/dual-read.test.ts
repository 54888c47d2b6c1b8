// Moving keys off one Postgres primary without losing dedupe: the dual-read window
// (core/dual-read.ts). Keys recorded in Postgres keep replaying during and after a
// switch to Redis or DynamoDB, until they expire; new keys go to the new store; a fleet
// half switched (some instances still on Postgres, others already on the new store)
// runs no key twice; the same window moves keys from idem_keys to daily partitions; and
// with encrypted stores (in the window, or the window encrypted) keys replay decrypted.
import { randomBytes, randomUUID } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem } from '../../src/core/engine.js'
import { dualReadKeyStore, dualReadStore } from '../../src/core/dual-read.js'
import { type KeyPeek } from '../../src/ports/key-peek.js'
import { InvalidOptionError } from '../../src/core/errors/index.js'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import type { LeasedStore } from '../../src/ports/leased-store.js'
import type { KeyStore } from '../../src/ports/key-store.js'
import { encryptedStore } from '../../src/stores/encrypted.js'
import { postgresStore, type PgClient, type PostgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { testDynamo } from '../support/dynamodb.js'
import { PG_URL, testSchema, type TestSchema } from '../support/postgres.js'
import { testRedis } from '../leased/support.js'

const db = await testSchema('idem_dual_read', 20)
const redis = await testRedis('dual-read')
const dynamo = await testDynamo('dual_read')

const targets: Array<[string, (LeasedStore & KeyPeek) | undefined]> = [
  ['Redis', redis === undefined ? undefined : redisStore({ client: redis.client, prefix: redis.prefix })],
  ['DynamoDB', dynamo?.store],
]

describe.skipIf(db === undefined)('the dual-read window', () => {
  const { pool, schema } = db as TestSchema
  let old: PostgresStore
  beforeAll(async () => {
    old = postgresStore({ pool, schema })
    await old.migrate()
    await pool.query(`CREATE TABLE "${schema}".effects (key text NOT NULL)`)
  })
  afterAll(async () => {
    await db?.drop()
    await redis?.drop()
    await dynamo?.drop()
  })
  const effectsOf = async (key: string) => (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE key = $1`, [key])).rows[0].n as number
  const inPostgres = async (key: string) => (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys WHERE key = $1`, [key])).rows[0].n as number

  describe.each(targets)('from Postgres to %s', (_name, target) => {
    it.skipIf(target === undefined)('keys recorded in Postgres replay from it through the switch, until they expire; new keys go to the new store', async () => {
      const store = target!
      const before = createIdem({ store: old })
      const long = Array.from({ length: 10 }, () => randomUUID())
      const short = Array.from({ length: 10 }, () => randomUUID())
      for (const [i, key] of [...long, ...short].entries()) {
        await before.run({ scope: 'acct', key, input: { i }, ttlMs: 60_000 }, async (tx) => {
          await tx.query(`INSERT INTO "${schema}".effects (key) VALUES ($1)`, [key])
          return { charged: i }
        })
      }

      // The switch: new calls run on the leased engine over the new store, Postgres consulted.
      const after = createLeasedIdem({ store: dualReadStore({ current: store, previous: old }), waitMs: 5_000 })
      let ran = 0
      for (const [i, key] of [...long, ...short].entries()) {
        const result = await after.run({ scope: 'acct', key, input: { i } }, async () => ++ran)
        expect(result).toEqual({ value: { charged: i }, replayed: true, stored: true })
      }
      expect(ran).toBe(0)
      const fresh = randomUUID()
      expect((await after.run({ scope: 'acct', key: fresh, input: 'new' }, async () => 'in the new store')).replayed).toBe(false)
      expect(await inPostgres(fresh)).toBe(0)
      expect(await store.peek('acct', fresh)).toMatchObject({ state: 'completed' })

      // The short keys expire in Postgres (their time is moved to the past rather than waited
      // out, which a slow machine could pass before the replays above): an expired key is a
      // new key, now recorded in the new store.
      await pool.query(`UPDATE "${schema}".idem_keys SET expires_at = now() - interval '1 millisecond' WHERE key = ANY($1)`, [short])
      for (const [i, key] of short.entries()) {
        expect((await after.run({ scope: 'acct', key, input: { i: i + 10 } }, async () => 'again')).replayed).toBe(false)
      }
      for (const [i, key] of long.entries()) expect((await after.run({ scope: 'acct', key, input: { i } }, async () => 'never')).value).toEqual({ charged: i })
      for (const key of long) expect(await effectsOf(key)).toBe(1)

      // After the window Postgres is not consulted: a key still live there would run again (so end it only after the old keys expired).
      const ended = createLeasedIdem({ store: dualReadStore({ current: store, previous: old, until: new Date(Date.now() - 1) }) })
      expect((await ended.run({ scope: 'acct', key: long[0]!, input: { i: 0 } }, async () => 'ran')).replayed).toBe(false)
    })

    it.skipIf(target === undefined)('a fleet switching over (instances on Postgres and on the new store at once) runs no key twice', async () => {
      const store = target!
      // Instances not switched yet: Postgres first, the new store consulted.
      const onPostgres = createIdem({ store: dualReadKeyStore({ current: old, previous: store }), waitMs: 10_000 })
      // Switched instances: the new store first, Postgres consulted.
      const switched = createLeasedIdem({ store: dualReadStore({ current: store, previous: old }), waitMs: 10_000, leaseMs: 10_000 })
      const keys = Array.from({ length: 60 }, () => randomUUID())
      const runs = new Map<string, number>()
      const answers = new Map<string, unknown[]>()
      const work = async (key: string) => {
        runs.set(key, (runs.get(key) ?? 0) + 1)
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 15))
        return { key, id: randomUUID() }
      }
      const calls = keys.flatMap((key) => Array.from({ length: 6 }, (_, n) => ({ key, n })))
      // Shuffled, 24 at a time, so each key's calls overlap on both sides.
      calls.sort(() => Math.random() - 0.5)
      let next = 0
      await Promise.all(
        Array.from({ length: 24 }, async () => {
          while (next < calls.length) {
            const { key, n } = calls[next++]!
            const result =
              n % 2 === 0
                ? await onPostgres.run({ scope: 'fleet', key, input: key }, async (tx: PgClient) => {
                    await tx.query(`INSERT INTO "${schema}".effects (key) VALUES ($1)`, [key])
                    return work(key)
                  })
                : await switched.run({ scope: 'fleet', key, input: key }, async () => work(key))
            answers.set(key, [...(answers.get(key) ?? []), result.value])
          }
        }),
      )
      for (const key of keys) {
        expect(runs.get(key), key).toBe(1)
        const values = answers.get(key)!
        expect(values).toHaveLength(6)
        for (const value of values) expect(value).toEqual(values[0])
      }
    })
  })

  describe('with encrypted stores: a key recorded in previous replays decrypted, in both orders of wrapping', () => {
    const sealing = { keys: { k1: randomBytes(32) }, current: 'k1' }
    const sealed = <S extends Parameters<typeof encryptedStore>[0]>(store: S) => encryptedStore(store, sealing)
    const recorded = (key: string) => ({ secret: key })
    // Where keys were recorded before the switch (encrypted, through that store's own engine).
    const previousStores: Array<[string, (KeyStore<PgClient> | LeasedStore) & KeyPeek | undefined]> = [
      ['Postgres', postgresStore({ pool, schema })],
      ['Redis', redis === undefined ? undefined : redisStore({ client: redis.client, prefix: `${redis.prefix}previous:` })],
      ['DynamoDB', dynamo?.store],
    ]
    const record = async (store: KeyStore<PgClient> | LeasedStore, key: string): Promise<void> => {
      const engine = 'begin' in store ? createIdem({ store: sealed(store) }) : createLeasedIdem({ store: sealed(store) })
      await engine.run({ scope: 'enc', key, input: 1 }, async () => recorded(key))
    }
    const orders = ['encrypted stores in a window', 'a window of plain stores, encrypted'] as const

    describe.each(previousStores)('previous: %s', (_name, previous) => {
      it.skipIf(previous === undefined).each(orders)('dualReadKeyStore (current: Postgres daily partitions): %s', async (order) => {
        const current = postgresStore({ pool, schema, keyLayout: 'daily-partitions', partitionDaysAhead: 2 })
        await current.migrate()
        const key = randomUUID()
        await record(previous!, key)
        const row = await previous!.peek('enc', key)
        expect(row.state === 'completed' && row.record.outcome).toMatch(/^"idem:enc:v1:k1:/)
        const store =
          order === 'encrypted stores in a window'
            ? dualReadKeyStore({ current: sealed(current), previous: sealed(previous!) })
            : sealed(dualReadKeyStore({ current, previous: previous! }))
        const retry = await createIdem({ store }).run({ scope: 'enc', key, input: 1 }, async () => 'ran again')
        expect(retry).toEqual({ value: recorded(key), replayed: true, stored: true })
      })

      it.skipIf(previous === undefined || redis === undefined).each(orders)('dualReadStore (current: Redis): %s', async (order) => {
        const current = redisStore({ client: redis!.client, prefix: `${redis!.prefix}current:` })
        const key = randomUUID()
        await record(previous!, key)
        const store =
          order === 'encrypted stores in a window'
            ? dualReadStore({ current: sealed(current), previous: sealed(previous!) })
            : sealed(dualReadStore({ current, previous: previous! }))
        const retry = await createLeasedIdem({ store }).run({ scope: 'enc', key, input: 1 }, async () => 'ran again')
        expect(retry).toEqual({ value: recorded(key), replayed: true, stored: true })
      })
    })
  })

  it('moves keys from idem_keys to daily partitions the same way (dualReadKeyStore)', async () => {
    // The window's peeks take a connection while a claim holds one: give them a pool of their own.
    const peekPool = new pg.Pool({ connectionString: PG_URL, max: 4, connectionTimeoutMillis: 10_000 })
    try {
      const partitioned = postgresStore({ pool, schema, keyLayout: 'daily-partitions', partitionDaysAhead: 2 })
      await partitioned.migrate()
      const key = randomUUID()
      await createIdem({ store: old }).run({ scope: 'acct', key, input: 1 }, async () => 'recorded in idem_keys')
      const moved = createIdem({ store: dualReadKeyStore({ current: partitioned, previous: postgresStore({ pool: peekPool, schema }) }) })
      expect(await moved.run({ scope: 'acct', key, input: 1 }, async () => 'never')).toEqual({ value: 'recorded in idem_keys', replayed: true, stored: true })
      const fresh = randomUUID()
      expect((await moved.run({ scope: 'acct', key: fresh, input: 1 }, async () => 'new')).replayed).toBe(false)
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".idem_keys_by_day WHERE key = $1`, [fresh])
      expect(rows[0].n).toBe(1)
      expect(() => dualReadKeyStore({ current: partitioned, previous: {} as KeyPeek })).toThrow(InvalidOptionError)
      expect(() => dualReadStore({ current: targets[0]![1] ?? (partitioned as never), previous: old, until: 'tomorrow' as never })).toThrow(/"until"/)
    } finally {
      await peekPool.end()
    }
  })
})
