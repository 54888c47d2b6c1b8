// Isolation and secrets. Keys of different scopes never meet, however the scope and key
// are spelled (separators, braces, percent signs, one's scope the other's key prefix),
// on every store, transactional and leased. Stored responses hold no header outside the
// allow-list. Outcomes encrypted at rest (encryptedStore): the raw rows hold no
// plaintext, a replay after a key rotation works, a row written for one key does not
// open under another, and a row whose key id is gone is a typed error.
import Database from 'better-sqlite3'
import fc from 'fast-check'
import { randomBytes, randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createIdem, createLeasedIdem, encryptedStore, InvalidOptionError, OutcomeUnreadableError, type KeyStore, type LeasedStore } from '../../src/index.js'
import { DEFAULT_REPLAY_HEADERS, idempotency } from '../../src/http/fetch/index.js'
import { leasedPostgresStore, postgresStore } from '../../src/stores/postgres/index.js'
import { redisStore } from '../../src/stores/redis/index.js'
import { sqliteStore, type SqliteDatabase } from '../../src/stores/sqlite/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { testRedis } from '../leased/support.js'
import { report, scale } from './support/table.js'

const CASES = scale(100, 1_000)
const db = await testSchema('idem_chaos_isolation', 8)
const redis = await testRedis('chaos-isolation')
if (redis === undefined && process.env.CI) throw new Error('Redis is required in CI')

// Spellings that a careless encoding would confuse: separators, hash-tag braces, escapes.
const awkward = fc.oneof(
  fc.constantFrom('a', 'a:b', 'b', ':', '{a}', '}{', '%3A', '%', 'a%3Ab', 'tenant', 'tenant:1', '1', '0:tenant'),
  fc.string({ unit: fc.constantFrom('a', 'b', ':', '{', '}', '%', '3', 'A', '|', '\\', ' '), minLength: 1, maxLength: 8 }),
)
// Keys are visible ASCII (the key syntax); scopes may hold anything.
const awkwardKey = awkward.map((k) => k.replaceAll(' ', '_'))

describe.skipIf(db === undefined)('isolation and secrets', () => {
  const { pool, schema } = db as TestSchema
  const sqlite = new Database(':memory:')
  beforeAll(async () => {
    await postgresStore({ pool, schema }).migrate()
    await leasedPostgresStore({ pool, schema }).migrate()
    sqliteStore({ db: sqlite as unknown as SqliteDatabase }).migrate()
  })
  afterAll(async () => {
    sqlite.close()
    await redis?.drop()
    await db?.drop()
  })

  it('keys of different scopes never collide, on every store', async ({ task }) => {
    const transactional: Array<[string, KeyStore<unknown>]> = [
      ['postgres', postgresStore({ pool, schema }) as KeyStore<unknown>],
      ['sqlite', sqliteStore({ db: sqlite as unknown as SqliteDatabase }) as KeyStore<unknown>],
    ]
    const leased: Array<[string, LeasedStore]> = [['leased postgres', leasedPostgresStore({ pool, schema })]]
    if (redis) leased.push(['redis', redisStore({ client: redis.client, prefix: redis.prefix })])
    let cases = 0
    let collisions = 0
    const engines = [
      ...transactional.map(([name, store]) => [name, createIdem({ store })] as const),
      ...leased.map(([name, store]) => [name, createLeasedIdem({ store })] as const),
    ]
    for (const [name, idem] of engines) {
      const run = idem.run as (options: { scope: string; key: string; input: unknown }, fn: () => unknown) => Promise<{ value: unknown; replayed: boolean }>
      await fc.assert(
        fc.asyncProperty(awkward, awkward, awkwardKey, async (scopeA, scopeB, key) => {
          if (scopeA === scopeB) return
          // Unique per run, shrinking included, so no run meets an earlier run's record.
          const k = `${key}-${run.length}-${cases++}-${randomUUID()}`
          const a = await run({ scope: scopeA, key: k, input: 1 }, () => ({ owner: scopeA }))
          const b = await run({ scope: scopeB, key: k, input: 1 }, () => ({ owner: scopeB }))
          if (b.replayed) collisions++
          expect(b, `${name}: ${scopeA} / ${scopeB} / ${k}`).toMatchObject({ value: { owner: scopeB }, replayed: false })
          expect(await run({ scope: scopeA, key: k, input: 1 }, () => ({ owner: 'ran again' }))).toMatchObject({ value: { owner: scopeA }, replayed: true })
          expect(a.value).toEqual({ owner: scopeA })
        }),
        { numRuns: CASES, seed: 20261201 },
      )
    }
    report(task, { scenario: `isolation: scopes × keys on ${engines.length} stores`, runs: cases, unit: 'pairs', duplicates: collisions, lost: 0, unexpected5xx: 0, notes: 'no key of one scope ever answered another\'s' })
  }, 300_000)

  it('stored responses hold no header outside the allow-list', async ({ task }) => {
    const store = sqliteStore({ db: sqlite as unknown as SqliteDatabase })
    const protect = idempotency({ idem: createIdem({ store }), scope: () => 'tenant' })
    const headerName = fc.oneof(fc.constantFrom('set-cookie', 'authorization', 'x-api-key', 'x-internal-token', 'cookie', 'location', 'content-type', 'etag', 'x-request-id'), fc.stringMatching(/^x-[a-z]{1,8}$/))
    const allowed = new Set(DEFAULT_REPLAY_HEADERS)
    let cases = 0
    let leaked = 0
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(headerName, { maxLength: 6 }), async (names) => {
        cases++
        const key = randomUUID()
        const secret = `secret-${randomUUID()}`
        const request = new Request('http://iso.test/orders', { method: 'POST', headers: { 'idempotency-key': `"${key}"` }, body: 'x' })
        await protect(request, async () => new Response('ok', { status: 201, headers: names.map((n) => [n, `${n}=${secret}`] as [string, string]) }))
        const row = sqlite.prepare('SELECT outcome FROM idem_keys WHERE key = ?').get(key) as { outcome: string }
        // Format 2: the headers as one flat list, name, value, name, value, …
        const stored = JSON.parse(row.outcome) as { v: number; headers: string[] }
        expect(stored.v).toBe(2)
        const storedNames = stored.headers.filter((_, i) => i % 2 === 0)
        for (const name of storedNames) if (!allowed.has(name)) leaked++
        for (const name of names) if (!allowed.has(name) && row.outcome.includes(`${name}=${secret}`)) leaked++
        expect(storedNames.filter((name) => !allowed.has(name))).toEqual([])
      }),
      { numRuns: CASES * 5, seed: 20261202 },
    )
    report(task, { scenario: 'secrets: stored headers against the allow-list', runs: cases, unit: 'responses', duplicates: 0, lost: leaked, unexpected5xx: 0, notes: `allow-list: ${[...allowed].join(', ')}` })
  })

  it('encrypted at rest: no plaintext in the rows, replays after rotation, rows bound to their key', async ({ task }) => {
    const k1 = randomBytes(32)
    const k2 = randomBytes(32)
    const marker = `PLAINTEXT-${randomUUID()}`
    const plain = postgresStore({ pool, schema })
    const before = createIdem({ store: encryptedStore(plain, { keys: { k1 }, current: 'k1' }) })
    const key = randomUUID()
    const first = await before.run({ scope: 'tenant', key, input: 1 }, async () => ({ secret: marker }))
    expect(first.value).toEqual({ secret: marker })
    const raw = async (k: string) => (await pool.query(`SELECT outcome FROM "${schema}".idem_keys WHERE key = $1`, [k])).rows[0].outcome as string
    expect(await raw(key)).not.toContain(marker)
    expect(await raw(key)).toMatch(/^"idem:enc:v1:k1:/)

    // Rotation: k2 is current, k1 is still accepted for the rows written with it.
    const rotated = createIdem({ store: encryptedStore(plain, { keys: { k2, k1 }, current: 'k2' }) })
    expect(await rotated.run({ scope: 'tenant', key, input: 1 }, async () => ({ secret: 'ran again' }))).toMatchObject({ value: { secret: marker }, replayed: true })
    const newer = randomUUID()
    await rotated.run({ scope: 'tenant', key: newer, input: 1 }, async () => ({ secret: marker }))
    expect(await raw(newer)).toMatch(/^"idem:enc:v1:k2:/)
    // k1 retired: its rows are a typed error (nothing runs again), k2's still replay.
    const retired = createIdem({ store: encryptedStore(plain, { keys: { k2 }, current: 'k2' }) })
    await expect(retired.run({ scope: 'tenant', key, input: 1 }, async () => ({ secret: 'ran again' }))).rejects.toBeInstanceOf(OutcomeUnreadableError)
    expect(await retired.run({ scope: 'tenant', key: newer, input: 1 }, async () => ({ secret: 'ran again' }))).toMatchObject({ value: { secret: marker }, replayed: true })
    // A row copied onto another key does not open there.
    const other = randomUUID()
    await rotated.run({ scope: 'tenant', key: other, input: 1 }, async () => ({ secret: 'mine' }))
    await pool.query(`UPDATE "${schema}".idem_keys SET outcome = $1 WHERE key = $2`, [await raw(newer), other])
    await expect(rotated.run({ scope: 'tenant', key: other, input: 1 }, async () => ({ secret: 'ran again' }))).rejects.toBeInstanceOf(OutcomeUnreadableError)

    // Leased: the outcome and every step's result are encrypted too.
    let checked = 3
    const leasedStores: Array<[string, LeasedStore, (k: string) => Promise<string>]> = [
      [
        'leased postgres',
        leasedPostgresStore({ pool, schema }),
        async (k) => {
          const lease = await pool.query(`SELECT coalesce(outcome, '') AS o FROM "${schema}".idem_leases WHERE key = $1`, [k])
          const steps = await pool.query(`SELECT coalesce(string_agg(result, ''), '') AS r FROM "${schema}".idem_steps WHERE key = $1`, [k])
          return `${lease.rows[0]?.o ?? ''}${steps.rows[0]?.r ?? ''}`
        },
      ],
    ]
    if (redis) {
      const store = redisStore({ client: redis.client, prefix: redis.prefix })
      leasedStores.push([
        'redis',
        store,
        async (k) => {
          const { claim, steps } = store.keysOf('tenant', k)
          return JSON.stringify([await redis.client.get(claim), await redis.client.hgetall(steps)])
        },
      ])
    }
    for (const [name, store, rawLeased] of leasedStores) {
      const idem = createLeasedIdem({ store: encryptedStore(store, { keys: { k1 }, current: 'k1' }), leaseMs: 10_000 })
      const k = randomUUID()
      let seenStep = ''
      await idem.run({ scope: 'tenant', key: k, input: 1 }, async (ctx) => {
        await ctx.step('llm', async () => ({ answer: marker }))
        seenStep = await rawLeased(k)
        return { secret: marker }
      })
      expect(seenStep, `${name}: the saved step`).not.toContain(marker)
      expect(seenStep).toContain('idem:enc:v1:k1:')
      expect(await rawLeased(k), `${name}: the outcome`).not.toContain(marker)
      const rotatedLeased = createLeasedIdem({ store: encryptedStore(store, { keys: { k2, k1 }, current: 'k2' }) })
      expect(await rotatedLeased.run({ scope: 'tenant', key: k, input: 1 }, async () => ({ secret: 'ran again' }))).toMatchObject({ value: { secret: marker }, replayed: true })
      const retiredLeased = createLeasedIdem({ store: encryptedStore(store, { keys: { k2 }, current: 'k2' }) })
      await expect(retiredLeased.run({ scope: 'tenant', key: k, input: 1 }, async () => ({ secret: 'ran again' }))).rejects.toBeInstanceOf(OutcomeUnreadableError)
      checked += 3
    }
    expect(() => encryptedStore(plain, { keys: { k1: randomBytes(16) }, current: 'k1' })).toThrow(InvalidOptionError)
    expect(() => encryptedStore(plain, { keys: { k1 }, current: 'k9' })).toThrow(InvalidOptionError)
    expect(() => encryptedStore(plain, { keys: { 'bad:id': k1 }, current: 'bad:id' })).toThrow(InvalidOptionError)
    report(task, { scenario: 'secrets: AES-256-GCM at rest, rotation, rows bound to their key', runs: checked, unit: 'checks', duplicates: 0, lost: 0, unexpected5xx: 0, notes: 'no plaintext in Postgres rows, leased rows, steps or Redis values; old key ids replay; a retired key id or a moved row is OutcomeUnreadableError' })
  })
})
