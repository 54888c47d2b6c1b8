// Protocol v2 kept a key's claim in a hash (src/stores/redis/v2-scripts.ts); v3 keeps it in
// a string. The keys here are written as the idem of protocol v2 wrote them: by v2's own
// scripts (the claim, step and completion it ran), straight on the server. A v3 store must
// replay v2's completed records for their retention, respect a v2 claim in flight and v2
// steps, and never write a hash itself.
import { afterAll, describe, expect, it } from 'vitest'
import { createLeasedIdem } from '../../src/index.js'
import { redisOperator, redisStore, type RedisKeys } from '../../src/stores/redis/index.js'
import { V2_SCRIPTS } from '../../src/stores/redis/scripts.js'
import { testRedis, type TestRedis } from './support.js'

const redis = await testRedis('v2')

describe.skipIf(redis === undefined)('redis store: keys of protocol v2', () => {
  const { client, prefix } = redis as TestRedis
  afterAll(() => redis?.drop())
  const store = redisStore({ client, prefix })
  const idem = createLeasedIdem({ store, leaseMs: 10_000, waitMs: 0 })

  /** Runs one of v2's scripts on a key, as an idem of v2 did. */
  const v2 = (name: keyof typeof V2_SCRIPTS, keys: RedisKeys, ...args: Array<string | number>): Promise<unknown> =>
    client.eval(V2_SCRIPTS[name], 2, keys.claim, keys.steps, ...args.map(String))

  /** A v2 claim of the key, acquired: its token. */
  const v2Claim = async (keys: RedisKeys, fingerprint: string, leaseMs = 10_000): Promise<string> => {
    const reply = (await v2('idemLeaseClaimV1', keys, fingerprint, leaseMs, 60_000, '0')) as [string, string]
    expect(reply[0]).toBe('acquired')
    return reply[1]
  }

  it('replays a completed v2 record, and answers another request with its fingerprint', async () => {
    const keys = store.keysOf('acct', 'v2-done')
    await v2('idemLeaseCompleteV1', keys, await v2Claim(keys, 'fp-1'), '{"ok":1}', 60_000)
    expect(await client.type(keys.claim)).toBe('hash')
    expect(await store.claim('acct', 'v2-done', 'fp-1', 10_000, 60_000)).toEqual({ state: 'completed', record: { fingerprint: 'fp-1', outcome: '{"ok":1}' } })
    expect(await store.claim('acct', 'v2-done', 'fp-2', 10_000, 60_000)).toEqual({ state: 'completed', record: { fingerprint: 'fp-1', outcome: '{"ok":1}' } })
    expect(await store.peek('acct', 'v2-done')).toEqual({ state: 'completed', record: { fingerprint: 'fp-1', outcome: '{"ok":1}' } })
    // Through the engine: replayed, nothing runs.
    let runs = 0
    const replayed = await idem.run({ scope: 'acct', key: 'v2-done', fingerprint: 'fp-1' }, async () => ++runs)
    expect({ replayed: replayed.replayed, value: replayed.value, runs }).toEqual({ replayed: true, value: { ok: 1 }, runs: 0 })
    expect((await redisOperator({ client, prefix }).inspect('acct', 'v2-done')).lease).toMatchObject({ state: 'completed', fingerprint: 'fp-1' })
  })

  it('respects a v2 claim in flight: running, and its holder still completes it', async () => {
    const keys = store.keysOf('acct', 'v2-held')
    const token = await v2Claim(keys, 'fp-1')
    expect(await store.claim('acct', 'v2-held', 'fp-2', 10_000, 60_000)).toEqual({ state: 'running', fingerprint: 'fp-1' })
    expect(await store.peek('acct', 'v2-held')).toEqual({ state: 'held' })
    expect(await v2('idemLeaseCompleteV1', keys, token, '"v2 outcome"', 60_000)).toBe(1)
    expect(await store.claim('acct', 'v2-held', 'fp-1', 10_000, 60_000)).toEqual({ state: 'completed', record: { fingerprint: 'fp-1', outcome: '"v2 outcome"' } })
  })

  it("resumes a released v2 key's steps for the same request, and refuses another request while they live", async () => {
    const keys = store.keysOf('acct', 'v2-steps')
    const token = await v2Claim(keys, 'fp-1')
    expect(await v2('idemLeaseSaveStepV1', keys, token, 'charge', '{"chargeId":"ch_1"}')).toBe(1)
    expect(await v2('idemLeaseReleaseV1', keys, token)).toBe(1)
    expect(await store.claim('acct', 'v2-steps', 'fp-2', 10_000, 60_000)).toEqual({ state: 'running', fingerprint: 'fp-1' })
    const charged: string[] = []
    const result = await idem.run({ scope: 'acct', key: 'v2-steps', fingerprint: 'fp-1' }, async (ctx) => {
      const charge = await ctx.step('charge', () => {
        charged.push('again')
        return { chargeId: 'ch_2' }
      })
      // The fencing token of a v2 claim is its token.
      expect(Number.isSafeInteger(await ctx.fencingToken())).toBe(true)
      return charge
    })
    expect({ value: result.value, charged }).toEqual({ value: { chargeId: 'ch_1' }, charged: [] })
    expect(await store.claim('acct', 'v2-steps', 'fp-1', 10_000, 60_000)).toEqual({
      state: 'completed',
      record: { fingerprint: 'fp-1', outcome: expect.stringContaining('ch_1') as unknown as string },
    })
  })

  it('writes protocol v3 for a new key and for a v2 key once its hash expired: a string, never a hash', async () => {
    const result = await idem.run({ scope: 'acct', key: 'v3-new', input: 1 }, async (ctx) => {
      await ctx.step('one', () => 1)
      return 'done'
    })
    expect(result.stored).toBe(true)
    const fresh = store.keysOf('acct', 'v3-new')
    expect(await client.type(fresh.claim)).toBe('string')
    expect(await client.get(fresh.claim)).toMatch(/^3c /)
    // A v2 claim whose lease and hash are gone: the key is new, claimed in v3.
    const keys = store.keysOf('acct', 'v2-gone')
    await v2Claim(keys, 'fp-1', 50)
    await client.pexpire(keys.claim, 1)
    while ((await client.exists(keys.claim)) === 1) await new Promise((resolve) => setTimeout(resolve, 5))
    const claim = await store.claim('acct', 'v2-gone', 'fp-2', 10_000, 60_000)
    expect(claim.state).toBe('acquired')
    expect(await client.type(keys.claim)).toBe('string')
    expect(await client.get(keys.claim)).toMatch(/^3h [0-9a-f-]{36} fp-2$/)
  })
})
