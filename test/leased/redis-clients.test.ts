// What differs between the clients the Redis store takes, shown on each: the server check
// of its first use (Redis 7.0 here, and a Valkey 8.1 with SET … IFEQ), the operator's
// reads (node-redis 6 speaks RESP3: a hash comes as a map), and a burst of concurrent
// claims (ioredis and node-redis pipeline concurrent commands differently).
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createLeasedIdem } from '../../src/index.js'
import { redisAdapter } from '../../src/stores/redis/adapter.js'
import { redisOperator, redisStore } from '../../src/stores/redis/index.js'
import { redisClients } from '../support/redis-clients.js'
import { startValkey } from '../support/valkey.js'
import { latch, REDIS_URL, testRedis, type TestRedis } from './support.js'

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
    const stepped = latch()
    const finish = latch()
    let token: number | undefined
    const running = createLeasedIdem({ store, leaseMs: 60_000 }).run({ scope: 'acct', key, input: 1 }, async (ctx) => {
      await ctx.step('charge', () => 'ch_1')
      // Protocol v3 makes a fencing token only when a call asks for one.
      token = await ctx.fencingToken()
      stepped.open()
      await finish.wait
      return 'done'
    })
    await stepped.wait
    const held = await operator.inspect('acct', key)
    expect(held.lease).toMatchObject({ state: 'held', fingerprint: expect.stringMatching(/.+/), token: String(token), leaseLive: true, steps: [{ name: 'charge' }] })
    expect(Date.parse(held.lease!.expiresAt!) - Date.parse(held.now)).toBeGreaterThan(60_000)
    finish.open()
    await running
    expect((await operator.inspect('acct', key)).lease).toMatchObject({ state: 'completed', leaseLive: false, steps: [] })
    expect(await operator.inspect('acct', `${key}-absent`)).not.toHaveProperty('lease')
  })

  it('1,000 concurrent claims of 10 keys: exactly one claim per key acquires', async () => {
    const store = redisStore({ client: await kind.connect(REDIS_URL), prefix: `${prefix}${kind.name.replace(' ', '-')}:` })
    const keys = Array.from({ length: 10 }, (_, i) => `burst-${i}`)
    const claims = await Promise.all(Array.from({ length: 1000 }, (_, i) => store.claim('acct', keys[i % 10]!, 'fp', 30_000, 60_000)))
    for (const [k, key] of keys.entries()) {
      const mine = claims.filter((_, i) => i % 10 === k)
      expect(mine.filter((c) => c.state === 'acquired'), key).toHaveLength(1)
      expect(mine.filter((c) => c.state === 'running'), key).toHaveLength(99)
    }
  })
})
