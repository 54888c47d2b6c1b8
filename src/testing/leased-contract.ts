import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { StoreUnavailableError } from '../core/errors/store-unavailable.js'
import type { Lease, LeasedStore } from '../ports/leased-store.js'
import type { ContractCase } from './key-store-contract.js'
import { LEASED_DATA_CASES } from './leased-contract-data.js'
import { LAPSE_MS, lapsed, LEASE_MS, sleep, TTL_MS, WRITING_LEASE_MS, type Acquired, type LeasedCase, type LeasedCaseKit } from './leased-contract-kit.js'

/** What a leased-store author supplies to run the contract against their store. */
export interface LeasedStoreHarness {
  /** A ready store (migrated), isolated from other runs (its own schema, file or key prefix). */
  store: LeasedStore
  /** A store of the same kind whose backend is down (closed pool, closed file, closed port). */
  unavailableStore(): LeasedStore | Promise<LeasedStore>
}

/**
 * The leased-store contract (see `LeasedStore` and `Lease` for the specification), as
 * plain cases any test runner can run: `for (const c of leasedStoreContract(h)) it(c.name, c.run)`.
 * Each case uses fresh random keys, so cases may share one harness and reruns never
 * collide. `getHarness` is called when a case runs. Fencing is checked by what a
 * replaced lease does (it changes nothing), and fencing tokens by `Lease.fencingToken`.
 *
 * @example
 * for (const { name, run } of leasedStoreContract(() => ({ store, unavailableStore: () => downStore }))) it(name, run)
 */
export function leasedStoreContract(getHarness: () => LeasedStoreHarness): ContractCase[] {
  let current!: LeasedStore
  const store = (): LeasedStore => current
  const kit: LeasedCaseKit = {
    store,
    fresh: (label) => `${label}-${randomUUID()}`,
    async acquire(scope, key, fingerprint, leaseMs = LEASE_MS, ttlMs = TTL_MS) {
      const claim = await current.claim(scope, key, fingerprint, leaseMs, ttlMs)
      assert.equal(claim.state, 'acquired', `expected to acquire ${key}, got ${JSON.stringify(claim)}`)
      return claim as Acquired
    },
    async stepsOf(scope, key, fingerprint) {
      return Object.fromEntries((await kit.acquire(scope, key, fingerprint)).steps)
    },
  }
  const cases: ContractCase[] = [
    ...[...FENCING_CASES, ...LEASED_DATA_CASES].map((leasedCase) => ({ name: leasedCase.name, run: () => leasedCase.run(kit) })),
    {
      name: 'a store that is down fails with StoreUnavailableError',
      async run() {
        const down = await getHarness().unavailableStore()
        await assert.rejects(down.claim('acct', kit.fresh('down'), 'fp', LEASE_MS, TTL_MS), StoreUnavailableError)
      },
    },
  ]
  return cases.map(({ name, run }) => ({
    name,
    run: async () => {
      current = getHarness().store
      await run()
    },
  }))
}

/** A lease's fencing token, asserted to be there (the lease holds): a positive safe integer. */
async function tokenOf(lease: Lease): Promise<number> {
  const token = await lease.fencingToken()
  assert.ok(token !== undefined && Number.isSafeInteger(token) && token > 0, `fencing token ${token} is not a positive safe integer`)
  return token
}

/** Asserts that every write through `lease` changes nothing and says so, and that it has no fencing token. */
async function assertSpent(lease: Lease, why: string): Promise<void> {
  assert.equal(await lease.renew(10_000), false, `renew ${why}`)
  assert.equal(await lease.saveStep('late', '"late"'), false, `saveStep ${why}`)
  assert.equal(await lease.complete('"late outcome"', TTL_MS), false, `complete ${why}`)
  assert.equal(await lease.release(), false, `release ${why}`)
  assert.equal(await lease.fencingToken(), undefined, `fencingToken ${why}`)
}

const FENCING_CASES: LeasedCase[] = [
  {
    name: 'a first claim acquires the key with a lease and no steps; its fencing token is a positive safe integer, the same on every read',
    async run({ fresh, acquire }) {
      const { lease, steps } = await acquire('acct', fresh('first'), 'fp-1', 10_000)
      assert.equal(steps.size, 0)
      const token = await tokenOf(lease)
      assert.equal(await lease.fencingToken(), token)
      assert.equal(await lease.renew(10_000), true)
      assert.equal(await lease.fencingToken(), token, 'a renewal keeps the fencing token')
    },
  },
  {
    name: "a claim while the lease is live sees the key running with the holder's fingerprint, whatever its own",
    async run({ store, fresh, acquire }) {
      const key = fresh('running')
      await acquire('acct', key, 'fp-1', 10_000)
      assert.deepEqual(await store().claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
      assert.deepEqual(await store().claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
    },
  },
  {
    name: 'complete stores the outcome once; later claims get the record; the lease is then spent',
    async run({ store, fresh, acquire }) {
      const key = fresh('complete')
      const { lease } = await acquire('acct', key, 'fp-1', 10_000)
      assert.equal(await lease.complete('{"orderId":42}', TTL_MS), true)
      const record = { state: 'completed', record: { fingerprint: 'fp-1', outcome: '{"orderId":42}' } }
      assert.deepEqual(await store().claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), record)
      assert.deepEqual(await store().claim('acct', key, 'fp-other', LEASE_MS, TTL_MS), record)
      await assertSpent(lease, 'after complete')
      assert.deepEqual(await store().claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), record)
    },
  },
  {
    name: 'a lapsed lease is taken over with a greater fencing token; the replaced lease then changes nothing',
    async run({ store, fresh, acquire }) {
      const key = fresh('takeover')
      const claimedAt = Date.now()
      const zombie = (await acquire('acct', key, 'fp-1', WRITING_LEASE_MS)).lease
      assert.equal(await zombie.saveStep('charge', '{"id":"ch_1"}'), true)
      const zombieToken = await tokenOf(zombie)
      await lapsed(claimedAt, WRITING_LEASE_MS)
      const { lease, steps } = await acquire('acct', key, 'fp-1', 10_000)
      const token = await tokenOf(lease)
      assert.ok(token > zombieToken, `takeover's fencing token ${token} is not greater than ${zombieToken}`)
      assert.deepEqual(Object.fromEntries(steps), { charge: '{"id":"ch_1"}' })
      assert.equal(await zombie.saveStep('charge', '{"id":"ch_zombie"}'), false)
      await assertSpent(zombie, 'through a replaced lease')
      // The survivor still holds the key, and finishes it.
      assert.deepEqual(await store().claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
      assert.equal(await lease.fencingToken(), token)
      assert.equal(await lease.complete('"survivor outcome"', TTL_MS), true)
      assert.deepEqual(await store().claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), {
        state: 'completed',
        record: { fingerprint: 'fp-1', outcome: '"survivor outcome"' },
      })
    },
  },
  {
    name: 'fencing tokens grow with every claim of a key: after a release, a lapse and a takeover',
    async run({ fresh, acquire }) {
      const key = fresh('monotonic')
      const first = (await acquire('acct', key, 'fp-1', 10_000)).lease
      const tokens = [await tokenOf(first)]
      assert.equal(await first.release(), true)
      assert.equal(await first.fencingToken(), undefined, 'a released lease has no fencing token')
      let claimedAt = Date.now()
      tokens.push(await tokenOf((await acquire('acct', key, 'fp-2', WRITING_LEASE_MS)).lease))
      await lapsed(claimedAt, WRITING_LEASE_MS)
      claimedAt = Date.now()
      tokens.push(await tokenOf((await acquire('acct', key, 'fp-2', WRITING_LEASE_MS)).lease))
      await lapsed(claimedAt, WRITING_LEASE_MS)
      tokens.push(await tokenOf((await acquire('acct', key, 'fp-3', 10_000)).lease))
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `fencing tokens do not grow: ${tokens.join(' → ')}`)
    },
  },
  {
    name: 'a key without steps is free for any request once released or lapsed',
    async run({ store, fresh, acquire }) {
      const key = fresh('free')
      const first = (await acquire('acct', key, 'fp-1')).lease
      assert.equal(await first.release(), true)
      await acquire('acct', key, 'fp-2')
      await sleep(LAPSE_MS)
      const { lease } = await acquire('acct', key, 'fp-3')
      assert.equal(await lease.complete('"third"', TTL_MS), true)
      assert.deepEqual(await store().claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), {
        state: 'completed',
        record: { fingerprint: 'fp-3', outcome: '"third"' },
      })
    },
  },
  {
    name: 'the claim decides, not the clock: a lapsed lease with steps that nobody took over still accepts its holder',
    async run({ store, fresh, acquire }) {
      const key = fresh('lapsed')
      const claimedAt = Date.now()
      const { lease } = await acquire('acct', key, 'fp-1', WRITING_LEASE_MS)
      assert.equal(await lease.saveStep('charge', '"ok"'), true)
      await lapsed(claimedAt, WRITING_LEASE_MS)
      assert.equal(await lease.renew(10_000), true)
      assert.equal(await lease.saveStep('email', '"sent"'), true)
      await sleep(LAPSE_MS)
      assert.deepEqual(await store().claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
      assert.equal(await lease.complete('"done"', TTL_MS), true)
    },
  },
  {
    name: 'renew extends the lease beyond its first end',
    async run({ store, fresh, acquire }) {
      const key = fresh('renew')
      const claimedAt = Date.now()
      const { lease } = await acquire('acct', key, 'fp-1', WRITING_LEASE_MS)
      assert.equal(await lease.renew(10_000), true)
      // Past the first lease's end.
      await lapsed(claimedAt, WRITING_LEASE_MS)
      assert.deepEqual(await store().claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
    },
  },
  {
    name: '5 keys × 100 concurrent claims: exactly one claim per key acquires',
    async run({ store, fresh }) {
      const keys = Array.from({ length: 5 }, (_, i) => fresh(`race${i}`))
      const claims = await Promise.all(
        keys.flatMap((key) => Array.from({ length: 100 }, (_, i) => store().claim('acct', key, `fp-${i % 2}`, 10_000, TTL_MS))),
      )
      keys.forEach((key, k) => {
        const mine = claims.slice(k * 100, k * 100 + 100)
        const winners = mine.filter((c) => c.state === 'acquired')
        assert.equal(winners.length, 1, `${key}: ${winners.length} claims acquired`)
        const winner = mine.indexOf(winners[0]!)
        for (const c of mine) if (c !== winners[0]) assert.deepEqual(c, { state: 'running', fingerprint: `fp-${winner % 2}` })
      })
    },
  },
]
