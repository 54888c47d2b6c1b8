import { Redis } from 'ioredis'
import { afterAll, describe } from 'vitest'
import { redisStore } from '../../src/stores/redis/index.js'
import { leasedStoreContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'
import { testRedis, type TestRedis } from '../leased/support.js'

const redis = await testRedis('contract')

describe.skipIf(redis === undefined)('redis leased store contract', () => {
  const { client, prefix } = redis as TestRedis
  const store = redisStore({ client, prefix })
  const closed: Redis[] = []
  afterAll(async () => {
    for (const c of closed) c.disconnect()
    await redis?.drop()
  })

  itFulfils(leasedStoreContract(() => ({
    store,
    unavailableStore: () => {
      // Nothing listens on port 1: every connection attempt is refused.
      const down = new Redis(1, '127.0.0.1', { lazyConnect: true })
      closed.push(down)
      return redisStore({ client: down, prefix, timeoutMs: 300 })
    },
  })))
})
