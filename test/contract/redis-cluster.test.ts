// The Redis store on a real 3-master Redis Cluster, through every client's Cluster
// (ioredis, iovalkey, node-redis 4, 5 and 6): the leased and inbox contracts pass with
// keys spread over the masters' slots.
import { Cluster } from 'ioredis'
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import { redisInboxKey, redisStore, type RedisStore } from '../../src/stores/redis/index.js'
import { itFulfilsRedisContracts } from '../support/redis-contracts.js'
import { redisClients } from '../support/redis-clients.js'
import { HEALTHY_STORE_TIMEOUT_MS } from '../support/contract.js'
import { startRedisCluster, type TestCluster } from '../support/redis-cluster.js'

const cluster = await startRedisCluster({ masters: 3 })
const clients = redisClients()
afterAll(async () => {
  await clients.close()
  await cluster?.stop()
})

describe.skipIf(cluster === undefined).each(clients.kinds)('redis store contracts on a 3-master Redis Cluster through $name', (kind) => {
  const { client: connect, seeds } = cluster as TestCluster
  // What the tests read and count with: ioredis's Cluster.
  const client = connect({ scaleReads: 'master' })
  const prefix = `idem-test:cluster:${randomBytes(4).toString('hex')}:`
  let store: RedisStore
  beforeAll(async () => {
    store = redisStore({ client: await kind.cluster(seeds), prefix, timeoutMs: HEALTHY_STORE_TIMEOUT_MS })
  })
  const down: Cluster[] = []
  afterAll(() => {
    for (const c of down) c.disconnect()
  })
  const unavailableStore = () => {
    // Nothing listens on port 1: the client never finds a node.
    const closed = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true, clusterRetryStrategy: () => null })
    closed.on('error', () => {})
    down.push(closed)
    return redisStore({ client: closed, prefix, timeoutMs: 300 })
  }

  itFulfilsRedisContracts(() => ({ store, unavailableStore }), prefix, () => client)

  it('spreads keys over every master, and the engine runs, replays and takes over on each', async () => {
    const idem = createLeasedIdem({ store, leaseMs: 200, waitMs: 5_000 })
    const keys = Array.from({ length: 30 }, (_, i) => `spread-${i}`)
    for (const key of keys) expect((await idem.run({ scope: 'acct', key, input: key }, async () => key)).replayed).toBe(false)
    for (const key of keys) expect(await idem.run({ scope: 'acct', key, input: key }, async () => 'never')).toEqual({ value: key, replayed: true, stored: true })
    const perMaster = await Promise.all(client.nodes('master').map(async (node) => (await node.keys(`${prefix}{acct:spread-*`)).length))
    expect(perMaster).toHaveLength(3)
    for (const count of perMaster) expect(count).toBeGreaterThan(0)
    // A holder that died on each master is taken over, and fenced off.
    for (const key of ['takeover-a', 'takeover-b', 'takeover-c', 'takeover-d', 'takeover-e', 'takeover-f']) {
      const dead = await store.claim('acct', key, 'fp', 100, 60_000)
      if (dead.state !== 'acquired') throw new Error(dead.state)
      await new Promise((resolve) => setTimeout(resolve, 150))
      const next = await store.claim('acct', key, 'fp', 10_000, 60_000)
      if (next.state !== 'acquired') throw new Error(next.state)
      expect(await dead.lease.complete('"zombie"', 60_000)).toBe(false)
      expect(await next.lease.complete('"survivor"', 60_000)).toBe(true)
    }
  })

  it("an inbox handler's command on a key outside the message's slot fails the whole commit: no effect, no id", async () => {
    const key = `cross-${randomBytes(4).toString('hex')}`
    const session = await store.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
    session.tx.call('INCR', session.tx.key(`${prefix}effect:`))
    session.tx.call('INCR', `${prefix}elsewhere:{${key}-other}`)
    await expect(session.commit()).rejects.toThrow(/^CROSSSLOT/)
    expect(await client.get(redisInboxKey(`${prefix}effect:`, key))).toBe(null)
    const retry = await store.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
    expect(retry.state).toBe('new')
    await retry.rollback()
  })
})
