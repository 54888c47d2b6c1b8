import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe } from 'vitest'
import { redisStore, type RedisStore } from '../../src/stores/redis/index.js'
import { leasedStoreContract } from '../../src/testing/index.js'
import { HEALTHY_STORE_TIMEOUT_MS, itFulfils } from '../support/contract.js'
import { itFulfilsRedisContracts } from '../support/redis-contracts.js'
import { redisClients } from '../support/redis-clients.js'
import { REDIS_URL, testRedis, type TestRedis } from '../leased/support.js'

const redis = await testRedis('contract')
const clients = redisClients()
afterAll(async () => {
  await clients.close()
  await redis?.drop()
})

// The same contracts through every client the store takes (each with prefix keys of its
// own); the effects are counted through the file's own ioredis connection.
describe.skipIf(redis === undefined).each(clients.kinds)('redis store contracts (one server) through $name', (kind) => {
  const { client: checker, prefix: base } = redis as TestRedis
  const prefix = `${base}${kind.name.replace(' ', '-')}:`
  let store: RedisStore
  beforeAll(async () => {
    store = redisStore({ client: await kind.connect(REDIS_URL), prefix, timeoutMs: HEALTHY_STORE_TIMEOUT_MS })
  })
  const unavailableStore = () => redisStore({ client: kind.unreachable(), prefix, timeoutMs: 300 })
  itFulfilsRedisContracts(() => ({ store, unavailableStore }), prefix, () => checker)
})

// docs/leased.md recommends ioredis' enableAutoPipelining (the commands of concurrent calls
// written to the socket together): the same contract on such a client.
describe.skipIf(redis === undefined)('redis store contracts (an ioredis client with enableAutoPipelining)', () => {
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
