// A response near and above what each store can hold: the route runs once per key on
// every store, its replay is whole up to `maxStoredBodyBytes` and body-omitted above it,
// and a `maxStoredBodyBytes` the store cannot hold is refused at creation. (DynamoDB
// used to fail the write at its item and transaction limits, answer 503 "nothing was
// run", and run the route again at every lease.)
import Database from 'better-sqlite3'
import { createHash } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { idempotency, largestStoredBody } from '../../src/http/fetch/index.js'
import { createIdem, createLeasedIdem, type KeyStore, type LeasedStore } from '../../src/index.js'
import { memoryLeasedStore, memoryStore } from '../../src/stores/memory/index.js'
import { leasedPostgresStore, postgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { leasedSqliteStore, sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { testDynamo } from '../support/dynamodb.js'
import { testSchema } from '../support/postgres.js'
import { sleep, testRedis } from '../leased/support.js'

const MiB = 1024 * 1024
const LEASE_MS = 300

const [pg, redis, dynamo] = await Promise.all([testSchema('outsize'), testRedis('outsize'), testDynamo('outsize')])
const db = new Database(':memory:')
const sqlite = db as unknown as SqliteDatabase
afterAll(async () => {
  await Promise.all([pg?.drop(), redis?.drop(), dynamo?.drop()])
  db.close()
})

interface StoreCase {
  name: string
  /** A leased store (`LeasedStore`), else a transactional one (`KeyStore`). */
  leased: boolean
  /** Undefined when the service is unreachable outside CI (the helpers say so, and fail in CI). */
  store: (() => Promise<KeyStore<unknown> | LeasedStore>) | undefined
  /** The leased engine's lease, where `LEASE_MS` is too short. */
  leaseMs?: number
}

const cases: StoreCase[] = [
  { name: 'memory', leased: false, store: async () => memoryStore() as KeyStore<unknown> },
  { name: 'memory, leased', leased: true, store: async () => memoryLeasedStore() },
  {
    name: 'SQLite',
    leased: false,
    store: async () => {
      const store = sqliteStore({ db: sqlite })
      store.migrate()
      return store as KeyStore<unknown>
    },
  },
  {
    name: 'SQLite, leased',
    leased: true,
    store: async () => {
      const store = leasedSqliteStore({ db: sqlite })
      store.migrate()
      return store
    },
  },
  {
    name: 'Postgres',
    leased: false,
    store:
      pg &&
      (async () => {
        const store = postgresStore({ pool: pg.pool, schema: pg.schema })
        await store.migrate()
        return store as KeyStore<unknown>
      }),
  },
  {
    name: 'Postgres, leased',
    leased: true,
    store:
      pg &&
      (async () => {
        const store = leasedPostgresStore({ pool: pg.pool, schema: pg.schema })
        await store.migrate()
        return store
      }),
  },
  // A generous timeout: a 16 MiB outcome is copied by Redis's single thread, and this machine
  // is shared. A claim without steps lapses with its lease on Redis, and no heartbeat runs
  // while a 16 MiB outcome is made and measured: a lease that surely outlasts that.
  { name: 'Redis', leased: true, leaseMs: 2_000, store: redis && (async () => redisStore({ client: redis.client, prefix: redis.prefix, timeoutMs: 10_000 })) },
  { name: 'DynamoDB', leased: true, store: dynamo && (async () => dynamo.store) },
]

const engineOf = (store: KeyStore<unknown> | LeasedStore, leaseMs: number) => ('claim' in store ? createLeasedIdem({ store, leaseMs }) : createIdem({ store }))
const digest = (bytes: ArrayBuffer | Uint8Array): string => createHash('sha256').update(new Uint8Array(bytes)).digest('hex')

for (const { name, leased: isLeased, store: makeStore, leaseMs = LEASE_MS } of cases) {
  describe.skipIf(makeStore === undefined)(`${name}: a response near and above what the store holds`, () => {
    it('a maxStoredBodyBytes whose stored form the store cannot hold is refused at creation, naming the option and the limit', async () => {
      const store = await makeStore!()
      const idem = engineOf(store, leaseMs)
      const largest = largestStoredBody(store.maxOutcomeBytes)
      const tooMuch = [largest + 1, ...(name === 'DynamoDB' ? [8 * MiB] : [])]
      for (const maxStoredBodyBytes of tooMuch) {
        expect(() => idempotency({ idem, scope: () => 'acct', maxStoredBodyBytes })).toThrow(
          new RegExp(`option "maxStoredBodyBytes" is ${maxStoredBodyBytes} bytes, but the \\w+ store holds outcomes of at most ${store.maxOutcomeBytes} bytes.*set ${largest} or less`),
        )
      }
      expect(() => idempotency({ idem, scope: () => 'acct', maxStoredBodyBytes: largest })).not.toThrow()
    })

    it('runs the route once per key: a body of maxStoredBodyBytes replays whole, a larger one (also past the store limit) without its body', async () => {
      const store = await makeStore!()
      const largest = largestStoredBody(store.maxOutcomeBytes)
      const protect = idempotency({ idem: engineOf(store, leaseMs), scope: () => 'acct', maxStoredBodyBytes: largest })
      const runs = new Map<string, number>()
      const route = (size: number) => async (request: Request) => {
        const key = request.headers.get('idempotency-key')!
        runs.set(key, (runs.get(key) ?? 0) + 1)
        const body = new Uint8Array(size)
        for (let i = 0; i < size; i += 4096) body[i] = i % 251
        return new Response(body, { status: 201, headers: { 'content-type': 'application/octet-stream', location: `/reports/${key}` } })
      }
      const post = (key: string) => new Request('http://shop.test/reports', { method: 'POST', headers: { 'idempotency-key': key }, body: '{}' })

      for (const size of [largest, largest + 1, store.maxOutcomeBytes + 1]) {
        const key = `k-${size}-${Math.random().toString(36).slice(2)}`
        const first = await protect(post(key), route(size))
        const firstBody = await first.arrayBuffer()
        expect([first.status, firstBody.byteLength]).toEqual([201, size])
        // Past any lease the first call held: a claim left behind would be taken over now and run again.
        await sleep(2 * leaseMs)
        for (let retry = 0; retry < 2; retry++) {
          const again = await protect(post(key), route(size))
          const againBody = await again.arrayBuffer()
          expect(again.status, answerText(again, againBody)).toBe(201)
          expect(again.headers.get('idempotent-replayed')).toBe('true')
          expect(again.headers.get('location')).toBe(`/reports/${key}`)
          if (size <= largest) {
            expect(again.headers.get('idempotent-body-omitted')).toBeNull()
            expect([againBody.byteLength, digest(againBody)]).toEqual([size, digest(firstBody)])
          } else {
            expect(again.headers.get('idempotent-body-omitted')).toBe('true')
            expect(againBody.byteLength).toBe(0)
          }
        }
        expect(runs.get(key), `the route ran ${runs.get(key)} times for a body of ${size} bytes`).toBe(1)
      }
    })

    it.skipIf(!isLeased)(
      'through the leased engine, an outcome larger than the store holds runs once: every retry, also after the lease, is OutcomeTooLargeError',
      async () => {
        const store = (await makeStore!()) as LeasedStore
        const idem = createLeasedIdem({ store, leaseMs, waitMs: 0 })
        // The 4.5 MB on DynamoDB (over its item and transaction limits), one byte over elsewhere.
        const size = Math.max(store.maxOutcomeBytes + 1, 4_500_000)
        const key = `engine-${Math.random().toString(36).slice(2)}`
        let runs = 0
        const report = async () => {
          runs++
          return 'a'.repeat(size - 2)
        }
        const outcomes: string[] = []
        for (let attempt = 0; attempt < 3; attempt++) {
          const error = await idem.run({ scope: 'acct', key, input: 1 }, report).then(
            () => undefined,
            (e: Error) => e,
          )
          outcomes.push(error === undefined ? 'stored' : `${error.name}: ${error.message.slice(0, 120)}`)
          await sleep(2 * leaseMs)
        }
        expect(runs, outcomes.join('\n')).toBe(1)
        expect(outcomes.every((o) => o.startsWith('OutcomeTooLargeError')), outcomes.join('\n')).toBe(true)
      },
    )
  })
}

/** An answer that is not the expected replay, as its status and problem text. */
function answerText(response: Response, body: ArrayBuffer): string {
  return `${response.status} ${response.status >= 400 ? Buffer.from(body).toString() : ''}`
}
