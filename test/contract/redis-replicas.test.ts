// The Redis store with waitForReplicas, on a primary and a replica of the test's own:
// every write it waits for goes with its WAIT in one pipeline, and the leased and inbox
// contracts still hold.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe } from 'vitest'
import { redisInboxKey, redisStore, type RedisTx } from '../../src/stores/redis/index.js'
import { inboxTableContract, leasedStoreContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'
import { redisReplication, type RedisReplication } from '../support/redis-replication.js'

const servers = redisReplication()
const primary = await servers?.start()
if (primary !== undefined) await servers!.start({ replicaOf: primary })

describe.skipIf(servers === undefined)('redis store contracts, waiting for a replica (waitForReplicas)', () => {
  const client = new Redis(primary!.port, '127.0.0.1')
  const prefix = `idem-test:replicas:${randomBytes(4).toString('hex')}:`
  // Generous: a loaded machine can take a few hundred ms to hear from the replica.
  const store = redisStore({ client, prefix, timeoutMs: 5_000, waitForReplicas: { count: 1, timeoutMs: 2_000 } })
  const closed: Redis[] = [client]
  afterAll(async () => {
    for (const c of closed) c.disconnect()
    await (servers as RedisReplication).stop()
  })
  const unavailableStore = () => {
    // Nothing listens on port 1: every connection attempt is refused.
    const down = new Redis(1, '127.0.0.1', { lazyConnect: true })
    down.on('error', () => {})
    closed.push(down)
    return redisStore({ client: down, prefix, timeoutMs: 300, waitForReplicas: { count: 1, timeoutMs: 100 } })
  }

  describe('leased (LeasedStore)', () => itFulfils(leasedStoreContract(() => ({ store, unavailableStore }))))
  describe('inbox (InboxTable, commands staged in the message slot)', () =>
    itFulfils(
      inboxTableContract(() => ({
        store,
        writeEffect: (tx: RedisTx) => tx.call('INCR', tx.key(`${prefix}effect:`)),
        countEffects: async (id: string) => Number((await client.get(redisInboxKey(`${prefix}effect:`, id))) ?? 0),
        unavailableStore,
      })),
    ))
})
