import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { OutcomeTooLargeError } from '../core/errors/outcome-too-large.js'
import { StoreUnavailableError } from '../core/errors/store-unavailable.js'
import { fingerprintValue } from '../core/fingerprint.js'
import { createLeasedIdem } from '../core/leased/engine.js'
import type { LeaseClaim, LeasedStore } from '../core/leased/store.js'
import type { ContractCase } from './key-store-contract.js'
import { peekOf } from './key-peek.js'
import { sizedValue } from './sized-value.js'
import { resultFields } from './result-fields.js'

/** What a leased-store author supplies to run the contract against their store. */
export interface LeasedStoreHarness {
  /** A ready store (migrated), isolated from other runs (its own schema, file or key prefix). */
  store: LeasedStore
  /** A store of the same kind whose backend is down (closed pool, closed file, closed port). */
  unavailableStore(): LeasedStore | Promise<LeasedStore>
}

// Short leases, and waits comfortably longer than them, keep the suite quick and calm.
const LEASE_MS = 100
const LAPSE_MS = 300
const TTL_MS = 60_000

/**
 * The leased-store contract (see `LeasedStore` for the specification), as plain cases
 * any test runner can run: `for (const c of leasedStoreContract(h)) it(c.name, c.run)`.
 * Each case uses fresh random keys, so cases may share one harness and reruns never
 * collide. `getHarness` is called when a case runs.
 *
 * @example
 * for (const { name, run } of leasedStoreContract(() => ({ store, unavailableStore: () => downStore }))) it(name, run)
 */
export function leasedStoreContract(getHarness: () => LeasedStoreHarness): ContractCase[] {
  let store!: LeasedStore
  const fresh = (label: string): string => `${label}-${randomUUID()}`

  async function acquire(scope: string, key: string, fingerprint: string, leaseMs = LEASE_MS, ttlMs = TTL_MS): Promise<number> {
    const claim = await store.claim(scope, key, fingerprint, leaseMs, ttlMs)
    assert.equal(claim.state, 'acquired', `expected to acquire ${key}, got ${JSON.stringify(claim)}`)
    return (claim as Extract<LeaseClaim, { state: 'acquired' }>).token
  }

  async function stepsOf(scope: string, key: string, fingerprint: string): Promise<Record<string, string>> {
    const claim = await store.claim(scope, key, fingerprint, LEASE_MS, TTL_MS)
    assert.equal(claim.state, 'acquired')
    return Object.fromEntries((claim as Extract<LeaseClaim, { state: 'acquired' }>).steps)
  }

  const cases: ContractCase[] = [
    {
      name: 'a first claim acquires the key with a safe-integer token and no steps',
      async run() {
        const claim = await store.claim('acct', fresh('first'), 'fp-1', LEASE_MS, TTL_MS)
        assert.equal(claim.state, 'acquired')
        const { token, steps } = claim as Extract<LeaseClaim, { state: 'acquired' }>
        assert.ok(Number.isSafeInteger(token) && token > 0, `token ${token} is not a positive safe integer`)
        assert.equal(steps.size, 0)
      },
    },
    {
      name: "a claim while the lease is live sees the key running with the holder's fingerprint, whatever its own",
      async run() {
        const key = fresh('running')
        await acquire('acct', key, 'fp-1', 10_000)
        assert.deepEqual(await store.claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
        assert.deepEqual(await store.claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
      },
    },
    {
      name: 'complete stores the outcome once; later claims get the record; the token is then spent',
      async run() {
        const key = fresh('complete')
        const token = await acquire('acct', key, 'fp-1')
        assert.equal(await store.complete('acct', key, token, '{"orderId":42}', TTL_MS), true)
        const record = { state: 'completed', record: { fingerprint: 'fp-1', outcome: '{"orderId":42}' } }
        assert.deepEqual(await store.claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), record)
        assert.deepEqual(await store.claim('acct', key, 'fp-other', LEASE_MS, TTL_MS), record)
        assert.equal(await store.complete('acct', key, token, '"again"', TTL_MS), false)
        assert.equal(await store.renew('acct', key, token, LEASE_MS), false)
        assert.equal(await store.saveStep('acct', key, token, 'late', '1'), false)
        assert.equal(await store.release('acct', key, token), false)
        assert.deepEqual(await store.claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), record)
      },
    },
    {
      name: 'a lapsed lease is taken over with a greater token; the stale holder then changes nothing',
      async run() {
        const key = fresh('takeover')
        const zombie = await acquire('acct', key, 'fp-1')
        assert.equal(await store.saveStep('acct', key, zombie, 'charge', '{"id":"ch_1"}'), true)
        await sleep(LAPSE_MS)
        const claim = await store.claim('acct', key, 'fp-1', 10_000, TTL_MS)
        assert.equal(claim.state, 'acquired')
        const { token, steps } = claim as Extract<LeaseClaim, { state: 'acquired' }>
        assert.ok(token > zombie, `takeover token ${token} is not greater than ${zombie}`)
        assert.deepEqual(Object.fromEntries(steps), { charge: '{"id":"ch_1"}' })
        assert.equal(await store.renew('acct', key, zombie, 10_000), false)
        assert.equal(await store.saveStep('acct', key, zombie, 'charge', '{"id":"ch_zombie"}'), false)
        assert.equal(await store.saveStep('acct', key, zombie, 'email', '"zombie"'), false)
        assert.equal(await store.complete('acct', key, zombie, '"zombie outcome"', TTL_MS), false)
        assert.equal(await store.release('acct', key, zombie), false)
        // The survivor still holds the key, and finishes it.
        assert.deepEqual(await store.claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
        assert.equal(await store.complete('acct', key, token, '"survivor outcome"', TTL_MS), true)
        assert.deepEqual(await store.claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), {
          state: 'completed',
          record: { fingerprint: 'fp-1', outcome: '"survivor outcome"' },
        })
      },
    },
    {
      name: 'tokens grow with every claim of a key: after a release, a lapse and a takeover',
      async run() {
        const key = fresh('monotonic')
        const tokens = [await acquire('acct', key, 'fp-1')]
        assert.equal(await store.release('acct', key, tokens[0]!), true)
        tokens.push(await acquire('acct', key, 'fp-2'))
        await sleep(LAPSE_MS)
        tokens.push(await acquire('acct', key, 'fp-2'))
        await sleep(LAPSE_MS)
        tokens.push(await acquire('acct', key, 'fp-3'))
        for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `tokens do not grow: ${tokens.join(' → ')}`)
      },
    },
    {
      name: 'saved steps come back, byte for byte, to the next holder of the same request',
      async run() {
        const key = fresh('steps')
        const token = await acquire('acct', key, 'fp-1')
        // A computed key: a literal `__proto__:` would set the prototype instead.
        const results = { charge: '{"id":"ch_1","amount":1000}', email: 'null', 'ünï 🧾': '"ω"', ['__proto__']: '{"a":[1,2]}' }
        for (const [name, result] of Object.entries(results)) assert.equal(await store.saveStep('acct', key, token, name, result), true)
        assert.equal(await store.release('acct', key, token), true)
        const steps = await stepsOf('acct', key, 'fp-1')
        assert.deepEqual(steps, results)
        assert.ok(Object.hasOwn(steps, '__proto__'))
      },
    },
    {
      name: 'an outcome and a step read back exactly as written through every read path: the claim, and peek where the store has it (KeyPeek)',
      async run() {
        const peek = peekOf(store)
        const key = fresh('read-back')
        const step = JSON.stringify({ id: 'ch_1', note: 'ω "quoted" \\' })
        const outcome = JSON.stringify({ text: 'ω "quoted" \\', lines: [1, 2] })
        if (peek) assert.deepEqual(await peek('acct', key), { state: 'absent' })
        const first = await acquire('acct', key, 'fp-1', 10_000)
        if (peek) assert.deepEqual(await peek('acct', key), { state: 'held' }, 'a live lease')
        assert.equal(await store.saveStep('acct', key, first, 'charge', step), true)
        assert.equal(await store.release('acct', key, first), true)
        if (peek) assert.deepEqual(await peek('acct', key), { state: 'held' }, 'released with steps to resume')
        const claim = await store.claim('acct', key, 'fp-1', 10_000, TTL_MS)
        assert.equal(claim.state, 'acquired')
        const { token, steps } = claim as Extract<LeaseClaim, { state: 'acquired' }>
        assert.deepEqual(Object.fromEntries(steps), { charge: step })
        assert.equal(await store.complete('acct', key, token, outcome, TTL_MS), true)
        const record = { fingerprint: 'fp-1', outcome }
        assert.deepEqual(await store.claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'completed', record })
        if (peek) assert.deepEqual(await peek('acct', key), { state: 'completed', record })
      },
    },
    {
      name: 'steps bind a key to its request: another request is refused while they live (released or lapsed)',
      async run() {
        const key = fresh('bound')
        const token = await acquire('acct', key, 'fp-1')
        assert.equal(await store.saveStep('acct', key, token, 'charge', '1'), true)
        assert.equal(await store.release('acct', key, token), true)
        assert.deepEqual(await store.claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
        await acquire('acct', key, 'fp-1')
        await sleep(LAPSE_MS)
        assert.deepEqual(await store.claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
        assert.deepEqual(await stepsOf('acct', key, 'fp-1'), { charge: '1' })
      },
    },
    {
      name: 'a key without steps is free for any request once released or lapsed',
      async run() {
        const key = fresh('free')
        const first = await acquire('acct', key, 'fp-1')
        assert.equal(await store.release('acct', key, first), true)
        await acquire('acct', key, 'fp-2')
        await sleep(LAPSE_MS)
        const token = await acquire('acct', key, 'fp-3')
        assert.equal(await store.complete('acct', key, token, '"third"', TTL_MS), true)
        assert.deepEqual(await store.claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), {
          state: 'completed',
          record: { fingerprint: 'fp-3', outcome: '"third"' },
        })
      },
    },
    {
      name: 'the token decides, not the clock: a lapsed lease nobody took over still accepts its holder',
      async run() {
        const key = fresh('lapsed')
        const token = await acquire('acct', key, 'fp-1')
        await sleep(LAPSE_MS)
        assert.equal(await store.renew('acct', key, token, 10_000), true)
        assert.equal(await store.saveStep('acct', key, token, 'charge', '"ok"'), true)
        await sleep(LAPSE_MS)
        assert.deepEqual(await store.claim('acct', key, 'fp-1', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
        assert.equal(await store.complete('acct', key, token, '"done"', TTL_MS), true)
      },
    },
    {
      name: 'renew extends the lease beyond its first end',
      async run() {
        const key = fresh('renew')
        const token = await acquire('acct', key, 'fp-1', LEASE_MS)
        assert.equal(await store.renew('acct', key, token, 10_000), true)
        await sleep(LAPSE_MS)
        assert.deepEqual(await store.claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
      },
    },
    {
      name: 'an expired key is a new key: completed or abandoned, its outcome and steps are gone',
      async run() {
        // Each write lands well inside its key's time (a store refuses writes to an expired
        // key, and a replica's acknowledgement can take hundreds of ms); only the waits outlast it.
        const done = fresh('expired-done')
        const token = await acquire('acct', done, 'fp-1')
        assert.equal(await store.saveStep('acct', done, token, 'charge', '1'), true)
        assert.equal(await store.complete('acct', done, token, '"old"', 50), true)
        const abandoned = fresh('expired-abandoned')
        const held = await acquire('acct', abandoned, 'fp-1', 500, 500)
        assert.equal(await store.saveStep('acct', abandoned, held, 'charge', '1'), true)
        await sleep(1_100)
        for (const key of [done, abandoned]) {
          const claim = await store.claim('acct', key, 'fp-2', LEASE_MS, TTL_MS)
          assert.equal(claim.state, 'acquired', `${key}: ${JSON.stringify(claim)}`)
          assert.equal((claim as Extract<LeaseClaim, { state: 'acquired' }>).steps.size, 0)
        }
      },
    },
    {
      name: '5 keys × 100 concurrent claims: exactly one claim per key acquires',
      async run() {
        const keys = Array.from({ length: 5 }, (_, i) => fresh(`race${i}`))
        const claims = await Promise.all(
          keys.flatMap((key) => Array.from({ length: 100 }, (_, i) => store.claim('acct', key, `fp-${i % 2}`, 10_000, TTL_MS))),
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
    {
      name: 'awkward scopes, keys and step names are stored exactly and kept apart',
      async run() {
        const id = randomUUID().slice(0, 8)
        const pairs: Array<[string, string]> = [
          ['a:b', `c${id}`],
          ['a', `b:c${id}`],
          ['{tag}', `}{${id}`],
          ['%7B', `%7D${id}`],
          [`ünïcödé-🧾-${id}`, '__proto__'],
          ['s'.repeat(1000) + id, 'x'.repeat(255)],
        ]
        const tokens = new Map<string, number>()
        for (const [scope, key] of pairs) tokens.set(`${scope}\0${key}`, await acquire(scope, key, `fp ${scope} ${key}`))
        const big = JSON.stringify({ text: 'ω'.repeat(50_000), quote: `"'\\` })
        for (const [scope, key] of pairs) {
          const token = tokens.get(`${scope}\0${key}`)!
          assert.equal(await store.saveStep(scope, key, token, 'n'.repeat(1000), big), true)
          assert.equal(await store.complete(scope, key, token, JSON.stringify([scope, key]), TTL_MS), true)
        }
        for (const [scope, key] of pairs) {
          assert.deepEqual(await store.claim(scope, key, 'other', LEASE_MS, TTL_MS), {
            state: 'completed',
            record: { fingerprint: `fp ${scope} ${key}`, outcome: JSON.stringify([scope, key]) },
          })
        }
        const key = fresh('big-step')
        const token = await acquire('acct', key, 'fp')
        assert.equal(await store.saveStep('acct', key, token, 'n'.repeat(1000), big), true)
        assert.equal(await store.release('acct', key, token), true)
        assert.deepEqual(await stepsOf('acct', key, 'fp'), { ['n'.repeat(1000)]: big })
      },
    },
    {
      name: 'a step result and an outcome of exactly maxOutcomeBytes are stored and read back whole',
      async run() {
        const max = store.maxOutcomeBytes
        const key = fresh('largest')
        const largest = JSON.stringify(sizedValue(max))
        const first = await acquire('acct', key, 'fp-1', 10_000)
        assert.equal(await store.saveStep('acct', key, first, 'report', largest), true)
        assert.equal(await store.release('acct', key, first), true)
        const resumed = await store.claim('acct', key, 'fp-1', 10_000, TTL_MS)
        assert.equal(resumed.state, 'acquired')
        const { token, steps } = resumed as Extract<LeaseClaim, { state: 'acquired' }>
        // Compared without assert.equal, whose message would print both values.
        assert.ok(steps.get('report') === largest, `a step result of ${max} bytes did not come back whole`)
        assert.equal(await store.complete('acct', key, token, largest, TTL_MS), true)
        const done = await store.claim('acct', key, 'fp-1', LEASE_MS, TTL_MS)
        assert.ok(done.state === 'completed' && done.record.outcome === largest, `an outcome of ${max} bytes did not come back whole`)
      },
    },
    {
      name: 'through the engine: an outcome one byte over maxOutcomeBytes leaves its key completed, and a retry after the lease runs nothing',
      async run() {
        const key = fresh('too-large')
        const idem = createLeasedIdem({ store, leaseMs: LEASE_MS, waitMs: 0 })
        let runs = 0
        const fn = async () => {
          runs++
          return sizedValue(store.maxOutcomeBytes + 1)
        }
        await assert.rejects(idem.run({ scope: 'acct', key, input: 1 }, fn), OutcomeTooLargeError)
        await sleep(LAPSE_MS)
        await assert.rejects(idem.run({ scope: 'acct', key, input: 1 }, fn), OutcomeTooLargeError)
        assert.equal(runs, 1)
      },
    },
    {
      name: 'through the engine: a holder that died after a step is taken over, and the step is not run again',
      async run() {
        const key = fresh('resume')
        const dead = await acquire('acct', key, fingerprintValue({ amount: 10 }))
        assert.equal(await store.saveStep('acct', key, dead, 'charge', '{"chargeId":"ch_1"}'), true)
        // The dead holder never renews; the engine polls until its lease lapses.
        const idem = createLeasedIdem({ store, leaseMs: 5_000, waitMs: 10_000 })
        let charged = 0
        const result = await idem.run({ scope: 'acct', key, input: { amount: 10 } }, async (ctx) => {
          const charge = await ctx.step('charge', async () => {
            charged++
            return { chargeId: 'ch_2' }
          })
          const email = await ctx.step('email', async () => `sent for ${charge.chargeId}`)
          return { charge, email }
        })
        assert.equal(charged, 0)
        assert.deepEqual(resultFields(result), { value: { charge: { chargeId: 'ch_1' }, email: 'sent for ch_1' }, replayed: false, stored: true })
        const again = await idem.run({ scope: 'acct', key, input: { amount: 10 } }, async () => 'never')
        assert.deepEqual(again, { ...result, replayed: true })
      },
    },
    {
      name: 'a store that is down fails with StoreUnavailableError',
      async run() {
        const down = await getHarness().unavailableStore()
        await assert.rejects(down.claim('acct', fresh('down'), 'fp', LEASE_MS, TTL_MS), StoreUnavailableError)
      },
    },
  ]
  return cases.map(({ name, run }) => ({
    name,
    run: async () => {
      store = getHarness().store
      await run()
    },
  }))
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
