// What differs between the clients the Redis store takes, shown on each: the server check
// of its first use (Redis 7.0 here, and a Valkey 8.1 with SET … IFEQ), the operator's
// reads (node-redis 6 speaks RESP3: a hash comes as a map), and a burst of concurrent
// claims (ioredis and node-redis pipeline concurrent commands differently).
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { redisAdapter } from '../../src/stores/redis/adapter.js'
import { redisOperator, redisStore } from '../../src/stores/redis/index.js'
import { redisClients } from '../support/redis-clients.js'
import { startValkey } from '../support/valkey.js'
import { REDIS_URL, testRedis, type TestRedis } from './support.js'

const redis = await testRedis('clients')
const valkey = await startValkey()
const clients = redisClients()
afterAll(async () => {
  await clients.close()
  await redis?.drop()
  await valkey?.stop()
})

/** Whether the server behind `url` takes SET … IFEQ, asked of it. */
async function takesIfEq(url: string): Promise<boolean> {
  const probe = new Redis(url)
  try {
    const key = `idem-test:ifeq:${randomBytes(4).toString('hex')}`
    await probe.set(key, 'v', 'PX', 10_000)
    return await probe.call('SET', key, 'w', 'IFEQ', 'v').then(
      (reply) => reply === 'OK',
      (error: Error) => {
        if (!error.message.startsWith('ERR syntax error')) throw error
        return false
      },
    )
  } finally {
    probe.disconnect()
  }
}

describe.skipIf(redis === undefined || valkey === undefined).each(clients.kinds)('the Redis store through $name', (kind) => {
  const { prefix } = redis as TestRedis

  it('reads the server once at its first use: which server, its version, and whether it takes SET … IFEQ, as the server itself answers', async () => {
    for (const [url, server, version] of [
      [REDIS_URL, 'redis', String(await (redis as TestRedis).client.info('server')).match(/redis_version:(\S+)/)![1]],
      [valkey!.url, 'valkey', valkey!.version],
    ] as const) {
      const adapter = redisAdapter(await kind.connect(url), 'client')
      expect(adapter.traits).toBe(undefined)
      const traits = await adapter.serverTraits()
      expect(traits).toEqual({ server, version, setIfEq: await takesIfEq(url) })
      expect(adapter.traits).toBe(traits)
      expect(await adapter.serverTraits()).toBe(traits)
    }
  })

  it("the operator inspects a held key and a completed one with the client's replies, whatever their protocol", async () => {
    const client = await kind.connect(REDIS_URL)
    const store = redisStore({ client, prefix })
    const operator = redisOperator({ client, prefix })
    const key = `inspect-${kind.name.replace(' ', '-')}`
    const claim = await store.claim('acct', key, 'fp-1', 60_000, 60_000)
    if (claim.state !== 'acquired') throw new Error(claim.state)
    expect(await store.saveStep('acct', key, claim.token, 'charge', '"ch_1"')).toBe(true)
    const held = await operator.inspect('acct', key)
    expect(held.lease).toMatchObject({ state: 'held', fingerprint: 'fp-1', token: String(claim.token), leaseLive: true, steps: [{ name: 'charge' }] })
    expect(Date.parse(held.lease!.expiresAt!) - Date.parse(held.now)).toBeGreaterThan(60_000)
    expect(await store.complete('acct', key, claim.token, '{"status":201}', 60_000)).toBe(true)
    expect((await operator.inspect('acct', key)).lease).toMatchObject({ state: 'completed', leaseLive: false, status: 201, steps: [] })
    expect(await operator.inspect('acct', `${key}-absent`)).not.toHaveProperty('lease')
  })

  it('1,000 concurrent claims of 10 keys: exactly one claim per key acquires, and each holder completes', async () => {
    const store = redisStore({ client: await kind.connect(REDIS_URL), prefix: `${prefix}${kind.name.replace(' ', '-')}:` })
    const keys = Array.from({ length: 10 }, (_, i) => `burst-${i}`)
    const claims = await Promise.all(Array.from({ length: 1000 }, (_, i) => store.claim('acct', keys[i % 10]!, 'fp', 30_000, 60_000)))
    for (const [k, key] of keys.entries()) {
      const mine = claims.filter((_, i) => i % 10 === k)
      const acquired = mine.filter((c) => c.state === 'acquired')
      expect(acquired, key).toHaveLength(1)
      expect(mine.filter((c) => c.state === 'running'), key).toHaveLength(99)
      expect(await store.complete('acct', key, acquired[0]!.token, `"${key}"`, 60_000)).toBe(true)
    }
    expect(await store.claim('acct', 'burst-3', 'fp', 30_000, 60_000)).toEqual({ state: 'completed', record: { fingerprint: 'fp', outcome: '"burst-3"' } })
  })
})
