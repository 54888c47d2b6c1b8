import { problemStatus } from '../../src/http/problem.js'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLeasedIdem, StoreUnavailableError } from '../../src/index.js'
import { redisStore, type RedisClient } from '../../src/stores/redis/index.js'
import { redisAdapter } from '../../src/stores/redis/adapter.js'
import { redisClients } from '../support/redis-clients.js'
import { privateRedis, sleep, type PrivateRedis } from './support.js'

const TIMEOUT_MS = 300
const clients = redisClients()
// A hang guard, far above the timeout: the call must settle on its own long before.
const GUARD_MS = 5_000

/** Settles as `promise` does, or rejects if it takes longer than `ms`. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const guard = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms)))
  try {
    return await Promise.race([promise, guard])
  } finally {
    clearTimeout(timer)
  }
}

function expectUnavailable(error: unknown): void {
  expect(error).toBeInstanceOf(StoreUnavailableError)
  expect(problemStatus(error as StoreUnavailableError)).toBe(503)
  expect((error as StoreUnavailableError).retryAfterSeconds).toBe(1)
}

/** A call of `key` fails with StoreUnavailableError within the store's timeout, and its function never runs. */
async function expectRefused(idem: ReturnType<typeof createLeasedIdem>, key: string): Promise<void> {
  let ran = false
  const error = await within(
    GUARD_MS,
    idem.run({ scope: 'acct', key, input: 1 }, async () => (ran = true)).then(
      () => undefined,
      (e: unknown) => e,
    ),
  )
  expectUnavailable(error)
  expect(ran).toBe(false)
}

const expectClosedPortRefused = (client: RedisClient) => expectRefused(createLeasedIdem({ store: redisStore({ client, timeoutMs: TIMEOUT_MS }) }), 'closed-port')

describe('redis down: a closed port', () => {
  const made: Redis[] = []
  afterAll(() => made.forEach((c) => c.disconnect()))

  for (const [label, options] of [
    ['default client options (commands queue while it reconnects)', {}],
    ['enableOfflineQueue: false (commands fail at once)', { enableOfflineQueue: false }],
    // The client's own timeout is shorter than the store's: the store keeps no clock of its own.
    ['the client’s own commandTimeout', { commandTimeout: TIMEOUT_MS / 2 }],
  ] as const) {
    it(`fails with StoreUnavailableError within timeoutMs and never runs the function — ioredis, ${label}`, async () => {
      // Nothing listens on port 1: every connection attempt is refused.
      const client = new Redis(1, '127.0.0.1', { ...options })
      client.on('error', () => {})
      made.push(client)
      await expectClosedPortRefused(client)
    })
  }

  // Every other client, trying to connect all along (node-redis queues the commands meanwhile).
  it.each(clients.kinds.filter((kind) => kind.name !== 'ioredis'))('fails with StoreUnavailableError within timeoutMs and never runs the function — $name', async (kind) => {
    await expectClosedPortRefused(kind.unreachable())
  })
})

const server = await privateRedis()

afterAll(async () => {
  await clients.close()
  await server?.stop()
})

describe.skipIf(server === undefined).each(clients.kinds)('redis slow or restarted (a server of the test’s own), through $name', (kind) => {
  const redis = server as PrivateRedis
  let client: RedisClient
  beforeAll(async () => {
    client = await kind.connect(redis.url)
  })

  it('slow (DEBUG SLEEP): StoreUnavailableError at the timeout, nothing runs, and the late claim is handed back', async () => {
    // A long lease: had the claim that arrived late kept the key, the retry below would wait it out.
    const idem = createLeasedIdem({ store: redisStore({ client, timeoutMs: TIMEOUT_MS }), leaseMs: 30_000 })
    await idem.run({ scope: 'acct', key: 'warm-up', input: 1 }, async () => 'ok')
    // On the store's own connection, so the claim queues behind the stall for certain.
    const sleeping = redisAdapter(client, 'client').send(['DEBUG', 'SLEEP', '1.5'])
    let ran = false
    const error = await within(
      GUARD_MS,
      idem.run({ scope: 'acct', key: 'slow', input: 1 }, async () => (ran = true)).then(
        () => undefined,
        (e: unknown) => e,
      ),
    )
    expectUnavailable(error)
    expect((error as Error).message).toMatch(/within 300 ms/)
    expect(ran).toBe(false)
    await sleeping
    const retry = await idem.run({ scope: 'acct', key: 'slow', input: 1, waitMs: 3_000 }, async () => 'ran after the stall')
    expect(retry).toEqual({ value: 'ran after the stall', replayed: false, stored: true })
  })

  it('stopped, then started again: unavailable while down, and the same client serves again with no restart', async () => {
    const idem = createLeasedIdem({ store: redisStore({ client, timeoutMs: TIMEOUT_MS }) })
    expect((await idem.run({ scope: 'acct', key: 'before', input: 1 }, async () => 'before')).replayed).toBe(false)
    await redis.stop()
    await expectRefused(idem, 'while-down')

    // A fresh server with no persistence: an empty keyspace and an empty script cache.
    await redis.start()
    let result: { value: string; replayed: boolean } | undefined
    for (let attempt = 0; result === undefined; attempt++) {
      try {
        result = await idem.run({ scope: 'acct', key: 'after', input: 1 }, async () => 'served again')
      } catch (e) {
        expectUnavailable(e) // only ever "unavailable" while the client reconnects
        if (attempt > 150) throw e
        await sleep(100)
      }
    }
    expect(result).toEqual({ value: 'served again', replayed: false, stored: true })
    expect(await idem.run({ scope: 'acct', key: 'after', input: 1 }, async () => 'never')).toEqual({ ...result, replayed: true })
  })
})

describe.skipIf(server === undefined)('redis down at the client’s first use', () => {
  it('the server check fails like any call (StoreUnavailableError), and is asked again once the server is up', async () => {
    const redis = server as PrivateRedis
    await redis.stop()
    const client = new Redis(redis.url, { maxRetriesPerRequest: 0 })
    client.on('error', () => {})
    try {
      const store = redisStore({ client, timeoutMs: TIMEOUT_MS })
      expectUnavailable(await store.claim('acct', 'first-use', 'fp', 10_000, 60_000).then(() => undefined, (e: unknown) => e))
      expect(redisAdapter(client, 'client').traits).toBe(undefined)
      await redis.start()
      let claim: Awaited<ReturnType<typeof store.claim>> | undefined
      for (let attempt = 0; claim === undefined; attempt++) {
        claim = await store.claim('acct', 'first-use', 'fp', 10_000, 60_000).catch((e: unknown) => {
          expectUnavailable(e) // only while the client reconnects
          if (attempt > 150) throw e
          return sleep(100).then(() => undefined)
        })
      }
      expect(claim.state).toBe('acquired')
      expect(redisAdapter(client, 'client').traits?.server).toBe('redis')
    } finally {
      client.disconnect()
    }
  })
})
