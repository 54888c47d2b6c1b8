import { afterAll, describe, expect, it } from 'vitest'
import { createLeasedIdem, discard, InvalidOptionError } from '../../src/index.js'
import { redisKeys, redisOperator, redisStore } from '../../src/stores/redis/index.js'
import { createClientPool } from 'redis'
import { Redis } from 'ioredis'
import { clusterSlot, REDIS_URL, testRedis, type TestRedis } from './support.js'

const redis = await testRedis('redis')

describe.skipIf(redis === undefined)('redis store', () => {
  const { client, prefix } = redis as TestRedis
  afterAll(() => redis?.drop())

  it('reads the server version once per client, at its first use; then costs two round trips for a fresh call (claim, complete) and one for a replay', async () => {
    const fresh = new Redis(REDIS_URL)
    const sent: string[] = []
    const original = fresh.sendCommand.bind(fresh)
    fresh.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      sent.push(command.name.toLowerCase())
      return (original as (...args: unknown[]) => unknown)(command, ...rest)
    }) as typeof fresh.sendCommand
    try {
      const idem = createLeasedIdem({ store: redisStore({ client: fresh, prefix }) })
      // The first call asks INFO first; a script may be new to the server (EVALSHA, then EVAL).
      await idem.run({ scope: 'acct', key: 'warm-up', input: 1 }, async () => ({ ok: true }))
      expect(sent[0]).toBe('info')
      sent.splice(0)
      await idem.run({ scope: 'acct', key: 'round-trips', input: 1 }, async () => ({ ok: true }))
      const first = sent.splice(0)
      await idem.run({ scope: 'acct', key: 'round-trips', input: 1 }, async () => ({ ok: true }))
      const replay = sent.splice(0)
      // Protocol v3: the claim is a plain SET NX PX GET; the completion a SET IFEQ where
      // the server has it, the compare-and-set script before (Redis 7.0 here).
      const info = String(await client.call('INFO', 'server'))
      const ifEq = /valkey_version:(8\.[1-9]|9|\d{2})/.test(info) || /redis_version:(8\.([4-9]|\d{2})|9|\d{2})/.test(info)
      expect(first).toEqual(['set', ifEq ? 'set' : 'evalsha'])
      expect(replay).toEqual(['set'])
      // Another store on the same client asks nothing more.
      await createLeasedIdem({ store: redisStore({ client: fresh, prefix: `${prefix}other:` }) }).run({ scope: 'acct', key: 'k', input: 1 }, async () => 1)
      expect(sent.filter((name) => name === 'info')).toEqual([])
    } finally {
      fresh.disconnect()
    }
  })

  it('refuses at creation a client it does not take, naming the option and the clients it takes', () => {
    const pool = createClientPool({ url: REDIS_URL })
    for (const client of [{}, { get: () => {} }, { sendCommand: () => {} }, pool, 'redis://127.0.0.1:6379', null]) {
      expect(() => redisStore({ client: client as never })).toThrow(InvalidOptionError)
      expect(() => redisStore({ client: client as never })).toThrow(
        'redisStore: option "client" must be an ioredis (5 or 6) or iovalkey Redis or Cluster, or a node-redis (redis 4, 5 or 6) createClient() or createCluster() client',
      )
    }
    expect(() => redisOperator({ client: {} as never })).toThrow(/^redisOperator: option "client" must be an ioredis/)
  })

  it('puts a key’s claim and steps in one Cluster slot, whatever the scope and key contain', () => {
    // Known slots from the Redis docs (CLUSTER KEYSLOT), so the CRC16 is Redis's own.
    expect(clusterSlot('123456789')).toBe(0x31c3 % 16384)
    expect(clusterSlot('somekey')).toBe(11058)
    expect(clusterSlot('foo{hash_tag}')).toBe(2515)
    expect(clusterSlot('{user1000}.following')).toBe(clusterSlot('{user1000}.followers'))
    for (const [scope, key] of [
      ['acct', 'order-1'],
      ['{x}', '}{'],
      ['a:b', 'c'],
      ['ünï', '%7B'],
      ['s'.repeat(1000), 'k'.repeat(255)],
    ] as const) {
      const keys = redisKeys('app:', scope, key)
      expect(clusterSlot(keys.claim)).toBe(clusterSlot(keys.steps))
      // The hash tag is the scope and key, so different keys spread over slots.
      expect(keys.claim.startsWith('app:{')).toBe(true)
    }
    expect(redisKeys('p:', 'a:b', 'c').claim).not.toBe(redisKeys('p:', 'a', 'b:c').claim)
    const slots = new Set(Array.from({ length: 50 }, (_, i) => clusterSlot(redisKeys('p:', 'acct', `k${i}`).claim)))
    expect(slots.size).toBeGreaterThan(40)
  })

  it('keeps stores with different prefixes apart, and refuses a prefix that would break the hash tag', async () => {
    const a = createLeasedIdem({ store: redisStore({ client, prefix: `${prefix}a:` }) })
    const b = createLeasedIdem({ store: redisStore({ client, prefix: `${prefix}b:` }) })
    expect((await a.run({ scope: 'acct', key: 'same', input: 1 }, async () => 'a')).value).toBe('a')
    expect(await b.run({ scope: 'acct', key: 'same', input: 1 }, async () => 'b')).toEqual({ value: 'b', replayed: false, stored: true })
    expect(await client.exists(`${prefix}a:{acct:same}:claim`, `${prefix}b:{acct:same}:claim`)).toBe(2)
    expect(() => redisStore({ client, prefix: 'app{1}:' })).toThrow(InvalidOptionError)
  })

  it('1,000 concurrent calls on 10 keys through the engine: one holder per key at any moment', async () => {
    // A generous timeout: 1,000 calls polling 10 keys on a shared machine; the deadlines are tested elsewhere.
    const idem = createLeasedIdem({ store: redisStore({ client, prefix, timeoutMs: 10_000 }), leaseMs: 30_000, waitMs: 60_000 })
    const keys = Array.from({ length: 10 }, (_, i) => `holders-${i}`)
    const holds = new Map<string, Array<{ start: number; end: number; token: number }>>(keys.map((k) => [k, []]))
    // Every holder gives the key back (it discards its outcome, and it saved no
    // step), so each of the 1,000 calls gets the key once, one after another.
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => {
        const key = keys[i % 10]!
        return idem.run({ scope: 'acct', key, input: key }, async (ctx) => {
          const start = performance.now()
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 2))
          holds.get(key)!.push({ start, end: performance.now(), token: await ctx.fencingToken() })
          return discard(i)
        })
      }),
    )
    expect(results.map((r) => r.value)).toEqual(Array.from({ length: 1000 }, (_, i) => i))
    for (const [key, intervals] of holds) {
      expect(intervals, key).toHaveLength(100)
      intervals.sort((x, y) => x.start - y.start)
      for (let i = 1; i < intervals.length; i++) {
        const [before, after] = [intervals[i - 1]!, intervals[i]!]
        expect(after.start, `${key}: holder ${i} started before holder ${i - 1} ended`).toBeGreaterThanOrEqual(before.end)
        expect(after.token, `${key}: fencing tokens must grow with each holder`).toBeGreaterThan(before.token)
      }
    }
  })
})
