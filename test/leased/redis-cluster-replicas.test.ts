// waitForReplicas on Redis Cluster, through every client's Cluster: WAIT counts the
// replicas of the node it runs on, so it must go to the master holding the key, on the
// connection that wrote. A 3-master
// cluster where only the first master has a replica: every key of that master's slots
// is claimed, every other key is refused (0 of 1), whichever node the client met first.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../src/core/errors/index.js'
import { redisInboxKeys, redisKeys, redisScripts, redisStore, type RedisStore } from '../../src/stores/redis/index.js'
import { redisClients } from '../support/redis-clients.js'
import { freePort } from '../support/free-port.js'
import { clusterSlot } from './support.js'
import { startRedisCluster, type TestCluster } from '../support/redis-cluster.js'
import { patience } from '../support/patience.js'

const cluster = await startRedisCluster({ masters: 3 })
const clients = redisClients()

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const timeoutMs = patience(30_000)
  const deadline = Date.now() + timeoutMs
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe.skipIf(cluster === undefined)('waitForReplicas on Redis Cluster', () => {
  const { nodes, seeds } = cluster as TestCluster
  const dir = mkdtempSync(join(tmpdir(), 'idem-cluster-replica-'))
  const probes: Redis[] = []
  let replica: ChildProcess | undefined
  const probe = (port: number) => {
    const redis = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 })
    redis.on('error', () => {})
    probes.push(redis)
    return redis
  }
  afterAll(async () => {
    for (const redis of probes) redis.disconnect()
    if (replica !== undefined && replica.exitCode === null && replica.signalCode === null) {
      const gone = new Promise((resolve) => replica!.once('exit', resolve))
      replica.kill('SIGKILL')
      await gone
    }
    await clients.close()
    await cluster?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  // A replica for the first master only.
  beforeAll(async () => {
    const first = probe(nodes[0]!.port)
    const myself = String(await first.call('CLUSTER', 'NODES')).split('\n').find((line) => line.includes('myself'))!
    const [firstId, address] = myself.split(' ') as [string, string]
    const firstBus = address.split('@')[1]!.split(',')[0]!
    await first.config('SET', 'repl-diskless-sync-delay', '0')
    const port = await freePort()
    const bus = await freePort()
    replica = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-port', String(bus), '--cluster-config-file', `nodes-${port}.conf`,
        '--cluster-node-timeout', '2000', '--dir', dir, '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    )
    const added = probe(port)
    await until('the replica up', async () => (await added.ping()) === 'PONG')
    await added.call('CLUSTER', 'MEET', '127.0.0.1', String(nodes[0]!.port), firstBus)
    await until('the replica meets the first master', async () => String(await added.call('CLUSTER', 'NODES')).includes(firstId))
    await until('the replica follows the first master', async () => (await added.call('CLUSTER', 'REPLICATE', firstId)) === 'OK')
    await until('the first master has its replica online', async () => /^slave0:.*state=online/m.test(await first.info('replication')))
  })

  const masters = nodes.map((node) => probe(node.port))
  /** The master (by index) that owns a key: the one that does not answer MOVED. */
  const owner = async (key: string) => {
    for (const [at, redis] of masters.entries()) {
      const moved = await redis.exists(key).then(() => false, (error: Error) => error.message.startsWith('MOVED'))
      if (!moved) return at
    }
    throw new Error(`no master owns ${key}`)
  }

  describe.each(clients.kinds)('through $name', (kind) => {
    const prefix = `idem-test:cluster-replicas:${randomBytes(4).toString('hex')}:`
    let store: RedisStore
    beforeAll(async () => {
      // A loaded machine can take a few hundred ms to hear from the replica; refusals on one
      // master take turns, each its full WAIT, so the store's timeout leaves room for them.
      store = redisStore({ client: await kind.cluster(seeds), prefix, timeoutMs: 10_000, waitForReplicas: { count: 1, timeoutMs: 1_000 } })
    })

    it("sends each write's WAIT to the master holding its key", async () => {
      // Keys of each master's slots: four on the first, two on each other.
      const wanted = [4, 2, 2]
      const keys: Array<{ key: string; onFirst: boolean }> = []
      for (let i = 0; keys.length < 8; i++) {
        const key = `spread-${i}`
        const at = await owner(redisKeys(prefix, 'acct', key).claim)
        if (wanted[at]! > 0) {
          wanted[at]!--
          keys.push({ key, onFirst: at === 0 })
        }
      }
      // Loaded on every master, so the claims take the EVALSHA path (not only the EVAL after NOSCRIPT).
      for (const redis of masters) for (const lua of Object.values(redisScripts.SCRIPTS)) await redis.script('LOAD', lua)
      const refusals: string[] = []
      const claimed = await Promise.all(
        keys.map(({ key }) =>
          store.claim('acct', key, 'fp', 10_000, 60_000).then(
            (claim) => claim.state === 'acquired',
            (error: Error) => {
              expect(error).toBeInstanceOf(StoreUnavailableError)
              expect(error.message).toMatch(/did not acknowledge claim: 0 of 1/)
              refusals.push(`${key}: ${error.message}`)
              return false
            },
          ),
        ),
      )
      expect(claimed, refusals.join('\n')).toEqual(keys.map(({ onFirst }) => onFirst))
    })

    it('follows a slot moved to another master after the client learned where it was: the write and its WAIT go to the new master', async () => {
      // A key of the second master's slots (no replica), moved to the first (a replica): the
      // client still sends it to the second, which answers MOVED.
      let key = ''
      for (let i = 0; key === ''; i++) if ((await owner(redisKeys(prefix, 'acct', `moved-${i}`).claim)) === 1) key = `moved-${i}`
      const slot = clusterSlot(redisKeys(prefix, 'acct', key).claim)
      const [from, to] = [masters[1]!, masters[0]!]
      const [fromId, toId] = [String(await from.call('CLUSTER', 'MYID')), String(await to.call('CLUSTER', 'MYID'))]
      expect(await from.call('CLUSTER', 'COUNTKEYSINSLOT', String(slot))).toBe(0)
      await to.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId)
      await from.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId)
      for (const master of [to, from, masters[2]!]) await master.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', toId)
      expect(await owner(redisKeys(prefix, 'acct', key).claim)).toBe(0)
      expect((await store.claim('acct', key, 'fp', 10_000, 60_000)).state).toBe('acquired')
    })

    it("an inbox handler's command outside the message's slot is still refused as CROSSSLOT, not retried", async () => {
      // A message of the first master's slots, so that its begin is acknowledged.
      let key = ''
      for (let i = 0; key === ''; i++) if ((await owner(redisInboxKeys(prefix, 'c', `cross-${i}`).id)) === 0) key = `cross-${i}`
      const session = await store.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
      session.tx.call('INCR', session.tx.key(`${prefix}effect:`))
      session.tx.call('INCR', `${prefix}elsewhere:{${key}-other}`)
      await expect(session.commit()).rejects.toThrow(/^CROSSSLOT/)
    })
  })
})
