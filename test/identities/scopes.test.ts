// Scopes and step names that are not well-formed UTF-16 (a lone surrogate) are refused
// by both engines on every store, before anything reaches the store. Postgres, Redis and
// DynamoDB keep text as UTF-8, where "t\ud800" and "t\udc00" both become "t\uFFFD": were
// they accepted, tenant B would be handed tenant A's stored outcome.
import Database from 'better-sqlite3'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, createLeasedIdem, deriveKey, InvalidKeyError, InvalidOptionError, type KeyStore, type LeasedStore } from '../../src/index.js'
import { memoryLeasedStore, memoryStore } from '../../src/stores/memory/index.js'
import { leasedPostgresStore, postgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { leasedSqliteStore, sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { testDynamo } from '../support/dynamodb.js'
import { testSchema } from '../support/postgres.js'
import { testRedis } from '../leased/support.js'

const pg = await testSchema('idem_identity_scopes')
const redis = await testRedis('identity-scopes')
const dynamo = await testDynamo('identity')
const sqlite = new Database(':memory:') as unknown as SqliteDatabase
const sqliteLeased = new Database(':memory:') as unknown as SqliteDatabase

afterAll(async () => {
  await Promise.all([pg?.drop(), redis?.drop(), dynamo?.drop()])
})

type Run = (options: { scope: string; key: string; input: unknown }, fn: (ctx: never) => unknown) => Promise<{ value: unknown; replayed: boolean }>

const engines: Array<[string, () => Run]> = []
const leasedEngines: Array<[string, () => ReturnType<typeof createLeasedIdem>]> = []
function transactional(name: string, store: () => KeyStore<unknown>) {
  engines.push([`${name} (transactional)`, () => createIdem({ store: store() }).run as unknown as Run])
}
function leased(name: string, store: () => LeasedStore) {
  engines.push([`${name} (leased)`, () => createLeasedIdem({ store: store() }).run as unknown as Run])
  leasedEngines.push([name, () => createLeasedIdem({ store: store() })])
}
transactional('memory', () => memoryStore() as KeyStore<unknown>)
leased('memory', () => memoryLeasedStore())
transactional('sqlite', () => sqliteStore({ db: sqlite }) as KeyStore<unknown>)
leased('sqlite', () => leasedSqliteStore({ db: sqliteLeased }))
if (pg) {
  transactional('postgres', () => postgresStore({ pool: pg.pool, schema: pg.schema }) as KeyStore<unknown>)
  leased('postgres', () => leasedPostgresStore({ pool: pg.pool, schema: pg.schema }))
}
if (redis) leased('redis', () => redisStore({ client: redis.client, prefix: redis.prefix }))
if (dynamo) leased('dynamodb', () => dynamo.store)

beforeAll(async () => {
  sqliteStore({ db: sqlite }).migrate()
  leasedSqliteStore({ db: sqliteLeased }).migrate()
  if (pg) {
    await postgresStore({ pool: pg.pool, schema: pg.schema }).migrate()
    await leasedPostgresStore({ pool: pg.pool, schema: pg.schema }).migrate()
  }
})

describe('scopes that are not well-formed UTF-16', () => {
  it.each(engines)('%s: tenants "t\\ud800" and "t\\udc00" are both refused, naming the scope; neither runs', async (_, engine) => {
    const run = engine()
    const key = randomUUID()
    const ran: string[] = []
    const outcomes: unknown[] = []
    for (const scope of ['t\ud800', 't\udc00']) {
      try {
        outcomes.push(await run({ scope, key, input: 1 }, () => (ran.push(scope), { secret: `of ${JSON.stringify(scope)}` })))
      } catch (error) {
        outcomes.push(error)
      }
    }
    // On 4ef1791: Postgres, Redis and DynamoDB answered tenant B with replayed: true and A's secret.
    expect(outcomes.map((o) => (o instanceof Error ? o.constructor.name : o))).toEqual(['InvalidKeyError', 'InvalidKeyError'])
    for (const error of outcomes) expect((error as Error).message).toMatch(/"scope" .*well-formed UTF-16/)
    expect(ran).toEqual([])
    // A well-formed scope next to them is unaffected.
    expect(await run({ scope: 't\ud83d\ude00', key, input: 1 }, () => 'fresh')).toMatchObject({ value: 'fresh', replayed: false })
  })

  it.each(engines)('%s: an empty, over-long or NUL scope is refused as a key (400 over HTTP); a scope that is no string is a misconfiguration', async (_, engine) => {
    const run = engine()
    for (const scope of ['', 's'.repeat(1025), 'a\0b']) {
      await expect(run({ scope, key: randomUUID(), input: 1 }, () => 1)).rejects.toThrow(InvalidKeyError)
    }
    await expect(run({ scope: undefined as unknown as string, key: randomUUID(), input: 1 }, () => 1)).rejects.toThrow(InvalidOptionError)
  })
})

describe('step names that are not well-formed UTF-16', () => {
  it.each(leasedEngines)('%s: ctx.step and ctx.derive refuse "s\\ud800", so it never shares a checkpoint or a derived key with "s\\udc00"', async (_, engine) => {
    const idem = engine()
    const seen: unknown[] = []
    await idem.run({ scope: 'acct', key: randomUUID(), input: 1 }, async (ctx) => {
      for (const name of ['s\ud800', 's\udc00']) {
        try {
          seen.push(ctx.derive(name))
        } catch (error) {
          seen.push(error)
        }
        try {
          seen.push(await ctx.step(name, () => `ran ${JSON.stringify(name)}`))
        } catch (error) {
          seen.push(error)
        }
      }
      return 'done'
    })
    // On 4ef1791 the two derived keys were equal (both hash "s\uFFFD" as UTF-8) and both steps ran.
    expect(seen.map((s) => (s instanceof Error ? s.constructor.name : typeof s))).toEqual(Array(4).fill('InvalidOptionError'))
    expect((seen[0] as Error).message).toMatch(/step name .*well-formed UTF-16/)
  })
})

describe('deriveKey', () => {
  it('refuses a scope, key or name with a lone surrogate: "a\\ud800" and "a\\udc00" would derive one downstream key', () => {
    // On 4ef1791 deriveKey('s', 'k', 'a\ud800') === deriveKey('s', 'k', 'a\udc00').
    for (const parts of [['s\ud800', 'k', 'a'], ['s', 'k\udc00', 'a'], ['s', 'k', 'a\ud800']] as Array<[string, string, string]>) {
      expect(() => deriveKey(...parts)).toThrow(InvalidOptionError)
    }
    expect(deriveKey('s', 'k', 'a\ud83d\ude00')).toMatch(/^[0-9a-f]{64}$/)
  })
})
