// waitForReplicas on a primary and a replica of the test's own: each write a later call
// relies on goes with a WAIT, and one the replica did not acknowledge (the replica
// detached with REPLICAOF NO ONE) is StoreUnavailableError: a claim is handed back and
// its function never runs, a completion, a step, a renewal and an inbox commit are
// reported unavailable, and a replay (or an inbox duplicate) needs the replica too.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import { InvalidOptionError, StoreUnavailableError } from '../../src/core/errors/index.js'
import { redisStore, type RedisClient, type RedisStore } from '../../src/stores/redis/index.js'
import { redisAdapter } from '../../src/stores/redis/adapter.js'
import { redisClients } from '../support/redis-clients.js'
import { redisReplication, type RedisNode, type RedisReplication } from '../support/redis-replication.js'

describe('waitForReplicas is checked at creation', () => {
  const client = new Redis({ lazyConnect: true })
  afterAll(() => client.disconnect())
  it.each([
    [1, /option "waitForReplicas" must be \{ count, timeoutMs\? \}/],
    [{ count: 0 }, /option "waitForReplicas.count" must be a whole number from 1 to 100, got 0/],
    [{ count: 1.5 }, /option "waitForReplicas.count"/],
    [{ count: 1, timeoutMs: 0 }, /option "waitForReplicas.timeoutMs" must be a whole number of milliseconds from 1/],
    [{ count: 1, timeoutMs: 1_000 }, /option "waitForReplicas.timeoutMs" \(1000\) must be less than option "timeoutMs" \(1000\)/],
    [{ count: 1, timout: 50 }, /option "waitForReplicas": "timout" is not an option/],
  ])('%j', (waitForReplicas, message) => {
    expect(() => redisStore({ client, waitForReplicas: waitForReplicas as never })).toThrow(InvalidOptionError)
    expect(() => redisStore({ client, waitForReplicas: waitForReplicas as never })).toThrow(message)
  })
  it('defaults its timeout to half the store\'s', () => {
    expect(() => redisStore({ client, timeoutMs: 2, waitForReplicas: { count: 1 } })).not.toThrow()
  })
})

const servers = redisReplication()
let primary: RedisNode | undefined
let replica: RedisNode | undefined
if (servers !== undefined) {
  primary = await servers.start()
  replica = await servers.start({ replicaOf: primary })
}

const clients = redisClients()
afterAll(async () => {
  await clients.close()
  await servers?.stop()
})

describe.skipIf(servers === undefined).each(clients.kinds)('waitForReplicas on a primary and its replica, through $name', (kind) => {
  const replication = servers as RedisReplication
  const prefix = `idem-test:replicas:${randomBytes(4).toString('hex')}:`
  // MONITOR's own connection.
  const monitoring = new Redis(primary!.port, '127.0.0.1')
  let client: RedisClient
  // Refusals wait out WAIT's timeout, so expected ones use a short one; a loaded machine
  // can take longer to hear from an attached replica, so expected successes use `patient`.
  let store: RedisStore
  let patient: RedisStore
  // The same keys through the same connection, on the primary's word alone.
  let plain: RedisStore
  beforeAll(async () => {
    client = await kind.connect(primary!.url)
    store = redisStore({ client, prefix, waitForReplicas: { count: 1, timeoutMs: 100 } })
    patient = redisStore({ client, prefix, timeoutMs: 3_000, waitForReplicas: { count: 1, timeoutMs: 1_000 } })
    plain = redisStore({ client, prefix })
  })
  afterAll(() => monitoring.disconnect())
  const detach = () => replication.promote(replica!)
  const attach = async () => {
    await replica!.ask('REPLICAOF', '127.0.0.1', primary!.port)
    await replication.caughtUp(primary!, replica!)
  }
  // The commands the primary ran, as MONITOR reports them, from the moment this is called.
  const watch = async () => {
    const monitor = await monitoring.monitor()
    const seen: string[] = []
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      // What the scripts run is theirs, not a round trip of the store's.
      if (source === 'lua') return
      const name = String(args[0]).toLowerCase()
      if (name === 'evalsha' || name === 'eval' || name === 'wait' || name === 'set') seen.push(name)
    })
    return {
      async stop() {
        // A PING through the store's own connection marks the end: MONITOR reports in order.
        await redisAdapter(client, 'client').send(['PING'])
        await new Promise((resolve) => setTimeout(resolve, 50))
        monitor.disconnect()
        return seen
      },
    }
  }
  let key = ''
  beforeEach(async () => {
    key = `k-${randomBytes(4).toString('hex')}`
    await attach()
  })

  it('sends a WAIT right after the claim, the step, the renewal and the completion, none after the release', async () => {
    // Each script's first EVALSHA on a server meets NOSCRIPT and is sent again as EVAL
    // (see the last case): run them all once first.
    const warm = await patient.claim('s', `${key}-warm`, 'fp', 10_000, 60_000)
    if (warm.state !== 'acquired') throw new Error(warm.state)
    await warm.lease.saveStep('one', '1')
    await warm.lease.renew(10_000)
    await warm.lease.release()
    const back = await patient.claim('s', `${key}-warm`, 'fp', 10_000, 60_000)
    if (back.state !== 'acquired') throw new Error(back.state)
    await back.lease.complete('"done"', 60_000)
    const watching = await watch()
    const claim = await patient.claim('s', key, 'fp', 10_000, 60_000)
    if (claim.state !== 'acquired') throw new Error(claim.state)
    expect(await claim.lease.saveStep('one', '1')).toBe(true)
    expect(await claim.lease.renew(10_000)).toBe(true)
    expect(await claim.lease.release()).toBe(true)
    const again = await patient.claim('s', key, 'fp', 10_000, 60_000)
    if (again.state !== 'acquired') throw new Error(again.state)
    expect(await again.lease.complete('"done"', 60_000)).toBe(true)
    // The claim, the step, the renewal, the release; the claim that finds its request's
    // steps (a 3s value) and the takeover it then sends; the completion.
    expect((await watching.stop()).join(' ')).toBe('evalsha wait evalsha wait evalsha wait evalsha evalsha wait evalsha wait evalsha wait')
  })

  it("a claim the replica did not acknowledge is StoreUnavailableError and is handed back; the function never runs", async () => {
    await detach()
    await expect(store.claim('s', key, 'fp', 10_000, 60_000)).rejects.toThrow(/^Redis replicas did not acknowledge claim: 0 of 1 within 100 ms \(waitForReplicas\)/)
    // Released at once: the primary's word alone now gets the key, not "running".
    expect((await plain.claim('s', key, 'fp', 10_000, 60_000)).state).toBe('acquired')
    let ran = 0
    const idem = createLeasedIdem({ store })
    await expect(idem.run({ scope: 's', key: `${key}-engine`, input: 1 }, () => ++ran)).rejects.toThrow(StoreUnavailableError)
    expect(ran).toBe(0)
  })

  it('a completion the replica did not acknowledge is StoreUnavailableError; the primary holds it, and replaying it needs the replica too', async () => {
    const claim = await patient.claim('s', key, 'fp', 10_000, 60_000)
    if (claim.state !== 'acquired') throw new Error(claim.state)
    await detach()
    // The claim's lease speaks for `patient`, which waits a whole second for the replica before it gives up.
    await expect(claim.lease.complete('"done"', 60_000)).rejects.toThrow(/did not acknowledge complete: 0 of 1/)
    expect(await plain.claim('s', key, 'fp', 10_000, 60_000)).toEqual({ state: 'completed', record: { fingerprint: 'fp', outcome: '"done"' } })
    await expect(store.claim('s', key, 'fp', 10_000, 60_000)).rejects.toThrow(/did not acknowledge claim: 0 of 1/)
    await attach()
    expect(await patient.claim('s', key, 'fp', 10_000, 60_000)).toEqual({ state: 'completed', record: { fingerprint: 'fp', outcome: '"done"' } })
  })

  it('a replay is confirmed by the replica, also through a connection that never wrote', async () => {
    // The replica stays connected but is stopped (SIGSTOP, confirmed by the kernel before
    // anything is written: a DEBUG SLEEP sent on a connection of its own could begin after
    // the WAIT below, and did once in CI), and the primary alone completes the key.
    await replica!.pause()
    const fresh = await kind.connect(primary!.url)
    try {
      const claim = await plain.claim('s', key, 'fp', 10_000, 60_000)
      if (claim.state !== 'acquired') throw new Error(claim.state)
      expect(await claim.lease.complete('"done"', 60_000)).toBe(true)
      // A WAIT on a fresh connection counts the replicas that have that connection's
      // writes: none, so every connected replica. The claim writes the record again so
      // that its WAIT covers it.
      const other = redisStore({ client: fresh, prefix, timeoutMs: 3_000, waitForReplicas: { count: 1, timeoutMs: 1_000 } })
      await expect(other.claim('s', key, 'fp', 10_000, 60_000)).rejects.toThrow(/did not acknowledge claim: 0 of 1 within 1000 ms/)
      await replica!.resume()
      await replication.caughtUp(primary!, replica!)
      expect(await other.claim('s', key, 'fp', 10_000, 60_000)).toEqual({ state: 'completed', record: { fingerprint: 'fp', outcome: '"done"' } })
    } finally {
      await replica!.resume()
    }
  })

  it('a step and a renewal the replica did not acknowledge are StoreUnavailableError', async () => {
    const claim = await patient.claim('s', key, 'fp', 10_000, 60_000)
    if (claim.state !== 'acquired') throw new Error(claim.state)
    await detach()
    await expect(claim.lease.saveStep('one', '1')).rejects.toThrow(/did not acknowledge saveStep: 0 of 1/)
    await expect(claim.lease.renew(10_000)).rejects.toThrow(/did not acknowledge renew: 0 of 1/)
    // Through the engine: the step's caller sees the store unavailable.
    await attach()
    const idem = createLeasedIdem({ store: patient })
    await expect(
      idem.run({ scope: 's', key: `${key}-engine`, input: 1 }, async (ctx) => {
        await detach()
        return await ctx.step('one', () => 1)
      }),
    ).rejects.toThrow(StoreUnavailableError)
  })

  it('an inbox commit and a failure count the replica did not acknowledge are StoreUnavailableError', async () => {
    const session = await patient.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
    expect(session.state).toBe('new')
    session.tx.call('INCR', session.tx.key(`${prefix}effect:`))
    await detach()
    await expect(session.commit()).rejects.toThrow(/did not acknowledge commit: 0 of 1/)
    await expect(store.inbox.recordFailure('c', `${key}-failed`, 'boom')).rejects.toThrow(/did not acknowledge recordFailure: 0 of 1/)
  })

  it('an inbox delivery that finds its message processed needs the replica too, before it is dropped as a duplicate', async () => {
    const first = await patient.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })
    expect(first.state).toBe('new')
    await first.commit()
    await detach()
    await expect(store.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })).rejects.toThrow(/did not acknowledge begin: 0 of 1/)
    await attach()
    expect((await patient.inbox.begin({ consumer: 'c', key, waitMs: 0, retentionMs: 60_000 })).state).toBe('processed')
  })

  it('a script the primary lost (SCRIPT FLUSH) is sent again with EVAL, its WAIT after it', async () => {
    await primary!.ask('SCRIPT', 'FLUSH')
    const watching = await watch()
    expect((await patient.claim('s', key, 'fp', 10_000, 60_000)).state).toBe('acquired')
    expect((await watching.stop()).join(' ')).toBe('evalsha wait eval wait')
  })

  it('a plain command and its WAIT go together too (SET … NX GET): its reply and the replicas that have it', async () => {
    const adapter = redisAdapter(client, 'client')
    const k = `${prefix}plain:${key}`
    const set = { command: ['SET', k, 'v', 'NX', 'PX', '60000', 'GET'], key: k }
    const watching = await watch()
    expect(await adapter.waited(set, 1, 1_000)).toEqual([null, 1])
    expect((await watching.stop()).join(' ')).toBe('set wait')
    await detach()
    expect(await adapter.waited(set, 1, 100)).toEqual(['v', 0])
  })
})
