// A master of a 3-master Redis Cluster killed and restarted while the leased engine is
// under load: calls whose keys live on it fail with StoreUnavailableError (503 with
// Retry-After over HTTP) and never with anything else, no key ever has two holders
// running at once, and no key runs twice: every key ends with one outcome that every
// success returned. The nodes keep an AOF with fsync always, as production nodes that
// must not forget keys do (without persistence a restarted node forgets, and the next
// call for a forgotten key runs again: see docs/leased.md).
import { randomBytes } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { InFlightError, StoreUnavailableError } from '../../src/core/errors/index.js'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import { redisKeys, redisStore, type RedisClient } from '../../src/stores/redis/index.js'
import { redisClients } from '../support/redis-clients.js'
import { startRedisCluster, type TestCluster } from '../support/redis-cluster.js'
import { clusterSlot } from './support.js'

// The restart (1.5 s down, then the AOF to load) must not reach the node timeout: were the
// victim called failed, the whole cluster would answer CLUSTERDOWN, keys on live masters too.
const cluster = await startRedisCluster({ masters: 3, appendonly: true, nodeTimeoutMs: 15_000 })

const clients = redisClients()

describe.skipIf(cluster === undefined)('the Redis store while a Cluster master restarts mid-load', () => {
  const { client: connect, nodes, seeds } = cluster as TestCluster
  afterAll(async () => {
    await clients.close()
    await cluster?.stop()
  })
  const ioredis = async (): Promise<RedisClient> =>
    connect({
      scaleReads: 'master',
      clusterRetryStrategy: (times: number) => Math.min(50 * times, 500),
      retryDelayOnClusterDown: 100,
      redisOptions: { connectTimeout: 500, maxRetriesPerRequest: 1 },
    })
  // ioredis with the options a server under load would give it; node-redis as it comes.
  const cases = [{ name: 'ioredis', connect: ioredis }, ...clients.only('node-redis 4', 'node-redis 5', 'node-redis 6').map((kind) => ({ name: kind.name, connect: () => kind.cluster(seeds) }))]

  it.each(cases)('answers StoreUnavailableError for the keys on the dead master, and runs no key twice — $name', async ({ connect: connectClient }) => {
    const client = connect({ scaleReads: 'master' })
    const prefix = `idem-test:restart:${randomBytes(4).toString('hex')}:`
    const store = redisStore({ client: await connectClient(), prefix, timeoutMs: 500 })
    const idem = createLeasedIdem({ store, leaseMs: 1_000, waitMs: 0 })
    // Fresh keys all along, each called by four callers at about the same time: fresh
    // runs, in-flight duplicates and replays all meet the outage.
    const keys: string[] = []
    let next = 0

    // Which master serves each key's slot, to show the failures land on the dead one.
    const slots = (await client.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>
    const ownerOf = (key: string) => {
      const slot = clusterSlot(redisKeys(prefix, 'acct', key).claim)
      return slots.find(([from, to]) => slot >= from && slot <= to)![2][1]
    }
    const victim = nodes[1]!
    const onVictim = { has: (key: string) => ownerOf(key) === victim.port }

    const running = new Set<string>()
    const runs = new Map<string, number>()
    const ran = new Set<string>()
    const fresh = new Map<string, unknown>()
    const successes = new Map<string, unknown[]>()
    const failures: Array<{ key: string; error: unknown }> = []
    let overlaps = 0
    let stopAt = Date.now() + 60_000

    async function caller(worker: number): Promise<void> {
      for (let i = 0; Date.now() < stopAt; i++) {
        const n = next++
        const key = `order-${n >> 2}`
        if (n % 4 === 0) keys.push(key)
        try {
          const result = await idem.run({ scope: 'acct', key, input: { key } }, async () => {
            if (running.has(key)) overlaps++
            running.add(key)
            runs.set(key, (runs.get(key) ?? 0) + 1)
            ran.add(`${worker}-${i}`)
            try {
              await new Promise((resolve) => setTimeout(resolve, 5))
              return { key, by: `${worker}-${i}` }
            } finally {
              running.delete(key)
            }
          })
          if (!result.replayed) {
            expect(fresh.has(key), `${key} ran to a second fresh outcome`).toBe(false)
            fresh.set(key, result.value)
          }
          successes.set(key, [...(successes.get(key) ?? []), result.value])
        } catch (error) {
          failures.push({ key, error })
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      }
    }

    const callers = Array.from({ length: 16 }, (_, w) => caller(w))
    await new Promise((resolve) => setTimeout(resolve, 500))
    await victim.stop()
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    await victim.start()
    await cluster!.healthy()
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    stopAt = 0
    await Promise.all(callers)

    // Every failure is the store being unavailable (503) or a key briefly in flight (409).
    const unexpected = failures.filter(({ error }) => !(error instanceof StoreUnavailableError) && !(error instanceof InFlightError))
    expect(unexpected.map(({ error }) => String(error))).toEqual([])
    const unavailable = failures.filter(({ error }) => error instanceof StoreUnavailableError)
    expect(unavailable.length).toBeGreaterThan(0)
    expect(unavailable.every(({ key }) => onVictim.has(key))).toBe(true)
    expect(overlaps).toBe(0)

    // Once the master is back, every key answers with its one outcome: keys whose
    // claim or completion was cut off run once their lease lapses, and only then.
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const slow = createLeasedIdem({ store, leaseMs: 1_000, waitMs: 5_000 })
    for (const key of keys) {
      const result = await slow.run({ scope: 'acct', key, input: { key } }, async () => {
        runs.set(key, (runs.get(key) ?? 0) + 1)
        ran.add('final')
        return { key, by: 'final' }
      })
      if (!result.replayed) {
        expect(fresh.has(key), `${key} ran to a second fresh outcome`).toBe(false)
        fresh.set(key, result.value)
      }
      // A completion whose answer came too late (the caller got 503) may still have
      // landed: its outcome is then the key's, and every answer must be that one.
      if (!fresh.has(key)) fresh.set(key, result.value)
      expect(ran.has((result.value as { by: string }).by), `${key}'s outcome comes from a run that happened`).toBe(true)
      for (const earlier of successes.get(key) ?? []) expect(earlier).toEqual(fresh.get(key))
      expect(result.value).toEqual(fresh.get(key))
    }
    // A key runs again only when its first run could not store its outcome (the master
    // died under it): that run's caller got StoreUnavailableError, never an answer.
    for (const key of keys) {
      const extra = (runs.get(key) ?? 0) - 1
      if (extra > 0) expect(onVictim.has(key), `${key} ran ${extra + 1} times on a live master`).toBe(true)
    }
  })
})
