// The Redis store with waitForReplicas, on a primary and a replica of the test's own,
// through every client: every write it waits for goes with its WAIT in one round trip,
// and the leased and inbox contracts still hold.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe } from 'vitest'
import { redisStore, type RedisStore } from '../../src/stores/redis/index.js'
import { itFulfilsRedisContracts } from '../support/redis-contracts.js'
import { redisClients } from '../support/redis-clients.js'
import { redisReplication, type RedisReplication } from '../support/redis-replication.js'

const servers = redisReplication()
const primary = await servers?.start()
if (primary !== undefined) await servers!.start({ replicaOf: primary })
const clients = redisClients()
// What the tests count effects with.
const client = new Redis(primary!.port, '127.0.0.1')
afterAll(async () => {
  client.disconnect()
  await clients.close()
  await (servers as RedisReplication).stop()
})

describe.skipIf(servers === undefined).each(clients.kinds)('redis store contracts, waiting for a replica (waitForReplicas), through $name', (kind) => {
  const prefix = `idem-test:replicas:${randomBytes(4).toString('hex')}:`
  let store: RedisStore
  beforeAll(async () => {
    // Generous: a loaded machine can take a few hundred ms to hear from the replica.
    store = redisStore({ client: await kind.connect(primary!.url), prefix, timeoutMs: 5_000, waitForReplicas: { count: 1, timeoutMs: 2_000 } })
  })
  const unavailableStore = () => redisStore({ client: kind.unreachable(), prefix, timeoutMs: 300, waitForReplicas: { count: 1, timeoutMs: 100 } })

  itFulfilsRedisContracts(() => ({ store, unavailableStore }), prefix, () => client)
})
