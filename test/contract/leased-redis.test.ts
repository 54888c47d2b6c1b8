import { Redis } from 'ioredis'
import { afterAll, describe } from 'vitest'
import { redisInboxKey, redisStore, type RedisTx } from '../../src/stores/redis/index.js'
import { inboxTableContract, leasedStoreContract } from '../../src/testing/index.js'
import { HEALTHY_STORE_TIMEOUT_MS, itFulfils } from '../support/contract.js'
import { REDIS_URL, testRedis, type TestRedis } from '../leased/support.js'

const redis = await testRedis('contract')
afterAll(async () => await redis?.drop())

describe.skipIf(redis === undefined)('redis store contracts (one server)', () => {
  const { client, prefix } = redis as TestRedis
  const store = redisStore({ client, prefix, timeoutMs: HEALTHY_STORE_TIMEOUT_MS })
  const closed: Redis[] = []
  afterAll(() => {
    for (const c of closed) c.disconnect()
  })
  const unavailableStore = () => {
    // Nothing listens on port 1: every connection attempt is refused.
    const down = new Redis(1, '127.0.0.1', { lazyConnect: true })
    down.on('error', () => {})
    closed.push(down)
    return redisStore({ client: down, prefix, timeoutMs: 300 })
  }

  describe('leased (LeasedStore)', () => itFulfils(leasedStoreContract(() => ({ store, unavailableStore }))))
  describe('inbox (InboxTable, commands staged in the message slot)', () =>
    itFulfils(
      inboxTableContract(() => ({
        store,
        writeEffect: (tx: RedisTx, id: string) => tx.call('INCR', tx.key(`${prefix}effect:`)),
        countEffects: async (id: string) => Number((await client.get(redisInboxKey(`${prefix}effect:`, id))) ?? 0),
        unavailableStore,
      })),
    ))
})

// docs/leased.md recommends ioredis' enableAutoPipelining (the commands of concurrent calls
// written to the socket together): the same contract on such a client.
describe.skipIf(redis === undefined)('redis store contracts (a client with enableAutoPipelining)', () => {
  const { prefix } = redis as TestRedis
  const client = new Redis(REDIS_URL, { enableAutoPipelining: true, maxRetriesPerRequest: 1 })
  const store = redisStore({ client, prefix: `${prefix}auto:`, timeoutMs: HEALTHY_STORE_TIMEOUT_MS })
  const closed: Redis[] = [client]
  afterAll(() => {
    for (const c of closed) c.disconnect()
  })
  const unavailableStore = () => {
    const down = new Redis(1, '127.0.0.1', { lazyConnect: true, enableAutoPipelining: true })
    down.on('error', () => {})
    closed.push(down)
    return redisStore({ client: down, prefix, timeoutMs: 300 })
  }
  describe('leased (LeasedStore)', () => itFulfils(leasedStoreContract(() => ({ store, unavailableStore }))))
})
