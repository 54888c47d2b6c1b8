import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { OutcomeTooLargeError } from '../core/errors/outcome-too-large.js'
import { fingerprintValue } from '../core/json-data.js'
import { createLeasedIdem } from '../core/leased/engine.js'
import type { Lease } from '../ports/leased-store.js'
import { peekOf } from './key-peek.js'
import { LAPSE_MS, LEASE_MS, sleep, TTL_MS, WRITING_LEASE_MS, type LeasedCase } from './leased-contract-kit.js'
import { resultFields } from './result-fields.js'
import { sizedValue } from './sized-value.js'

/**
 * The leased contract's cases about what a store keeps: steps and outcomes read back
 * exactly (every read path, awkward names, the largest size), steps binding a key to
 * its request, expiry, and two runs through the engine.
 */
export const LEASED_DATA_CASES: LeasedCase[] = [
  {
    name: 'saved steps come back, byte for byte, to the next holder of the same request',
    async run({ fresh, acquire, stepsOf }) {
      const key = fresh('steps')
      const { lease } = await acquire('acct', key, 'fp-1', 10_000)
      // A computed key: a literal `__proto__:` would set the prototype instead.
      const results = { charge: '{"id":"ch_1","amount":1000}', email: 'null', 'ünï 🧾': '"ω"', ['__proto__']: '{"a":[1,2]}' }
      for (const [name, result] of Object.entries(results)) assert.equal(await lease.saveStep(name, result), true)
      assert.equal(await lease.release(), true)
      const steps = await stepsOf('acct', key, 'fp-1')
      assert.deepEqual(steps, results)
      assert.ok(Object.hasOwn(steps, '__proto__'))
    },
  },
  {
    name: 'an outcome and a step read back exactly as written through every read path: the claim, and peek where the store has it (KeyPeek)',
    async run({ store, fresh, acquire }) {
      const peek = peekOf(store())
      const key = fresh('read-back')
      const step = JSON.stringify({ id: 'ch_1', note: 'ω "quoted" \\' })
      const outcome = JSON.stringify({ text: 'ω "quoted" \\', lines: [1, 2] })
      if (peek) assert.deepEqual(await peek('acct', key), { state: 'absent' })
      const first = (await acquire('acct', key, 'fp-1', 10_000)).lease
      if (peek) assert.deepEqual(await peek('acct', key), { state: 'held' }, 'a live lease')
      assert.equal(await first.saveStep('charge', step), true)
      assert.equal(await first.release(), true)
      if (peek) assert.deepEqual(await peek('acct', key), { state: 'held' }, 'released with steps to resume')
      const { lease, steps } = await acquire('acct', key, 'fp-1', 10_000)
      assert.deepEqual(Object.fromEntries(steps), { charge: step })
      assert.equal(await lease.complete(outcome, TTL_MS), true)
      const record = { fingerprint: 'fp-1', outcome }
      assert.deepEqual(await store().claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'completed', record })
      if (peek) assert.deepEqual(await peek('acct', key), { state: 'completed', record })
    },
  },
  {
    name: 'steps bind a key to its request: another request is refused while they live (released or lapsed)',
    async run({ store, fresh, acquire, stepsOf }) {
      const key = fresh('bound')
      const { lease } = await acquire('acct', key, 'fp-1', 10_000)
      assert.equal(await lease.saveStep('charge', '1'), true)
      assert.equal(await lease.release(), true)
      assert.deepEqual(await store().claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
      await acquire('acct', key, 'fp-1')
      await sleep(LAPSE_MS)
      assert.deepEqual(await store().claim('acct', key, 'fp-2', LEASE_MS, TTL_MS), { state: 'running', fingerprint: 'fp-1' })
      assert.deepEqual(await stepsOf('acct', key, 'fp-1'), { charge: '1' })
    },
  },
  {
    name: 'an expired key is a new key: completed or abandoned, its outcome and steps are gone',
    async run({ store, fresh, acquire }) {
      // Each write lands well inside its key's time (a store refuses writes to an expired
      // key, and a replica's acknowledgement can take hundreds of ms); only the waits outlast it.
      const done = fresh('expired-done')
      const first = (await acquire('acct', done, 'fp-1', 10_000)).lease
      assert.equal(await first.saveStep('charge', '1'), true)
      assert.equal(await first.complete('"old"', 50), true)
      const abandoned = fresh('expired-abandoned')
      const held = (await acquire('acct', abandoned, 'fp-1', 500, 500)).lease
      assert.equal(await held.saveStep('charge', '1'), true)
      await sleep(1_100)
      for (const key of [done, abandoned]) {
        const claim = await acquire('acct', key, 'fp-2')
        assert.equal(claim.steps.size, 0, `${key}: steps of an expired key came back`)
      }
    },
  },
  {
    name: 'awkward scopes, keys and step names are stored exactly and kept apart',
    async run({ store, fresh, acquire, stepsOf }) {
      const id = randomUUID().slice(0, 8)
      const pairs: Array<[string, string]> = [
        ['a:b', `c${id}`],
        ['a', `b:c${id}`],
        ['{tag}', `}{${id}`],
        ['%7B', `%7D${id}`],
        [`ünïcödé-🧾-${id}`, '__proto__'],
        ['s'.repeat(1000) + id, 'x'.repeat(255)],
      ]
      const big = JSON.stringify({ text: 'ω'.repeat(50_000), quote: `"'\\` })
      const leases: Lease[] = []
      // A lease that outlasts the test: a claim without steps may lapse with its lease (Redis).
      for (const [scope, key] of pairs) leases.push((await acquire(scope, key, `fp ${scope} ${key}`, 10_000)).lease)
      for (const [i, [scope, key]] of pairs.entries()) {
        const lease = leases[i]!
        assert.equal(await lease.saveStep('n'.repeat(1000), big), true)
        assert.equal(await lease.complete(JSON.stringify([scope, key]), TTL_MS), true)
      }
      for (const [scope, key] of pairs) {
        assert.deepEqual(await store().claim(scope, key, 'other', LEASE_MS, TTL_MS), {
          state: 'completed',
          record: { fingerprint: `fp ${scope} ${key}`, outcome: JSON.stringify([scope, key]) },
        })
      }
      const key = fresh('big-step')
      const { lease } = await acquire('acct', key, 'fp', 10_000)
      assert.equal(await lease.saveStep('n'.repeat(1000), big), true)
      assert.equal(await lease.release(), true)
      assert.deepEqual(await stepsOf('acct', key, 'fp'), { ['n'.repeat(1000)]: big })
    },
  },
  {
    name: 'a step result and an outcome of exactly maxOutcomeBytes are stored and read back whole',
    async run({ store, fresh, acquire }) {
      const max = store().maxOutcomeBytes
      const key = fresh('largest')
      const largest = JSON.stringify(sizedValue(max))
      const first = (await acquire('acct', key, 'fp-1', 10_000)).lease
      assert.equal(await first.saveStep('report', largest), true)
      assert.equal(await first.release(), true)
      const { lease, steps } = await acquire('acct', key, 'fp-1', 10_000)
      // Compared without assert.equal, whose message would print both values.
      assert.ok(steps.get('report') === largest, `a step result of ${max} bytes did not come back whole`)
      assert.equal(await lease.complete(largest, TTL_MS), true)
      const done = await store().claim('acct', key, 'fp-1', LEASE_MS, TTL_MS)
      assert.ok(done.state === 'completed' && done.record.outcome === largest, `an outcome of ${max} bytes did not come back whole`)
    },
  },
  {
    name: 'through the engine: an outcome one byte over maxOutcomeBytes leaves its key completed, and a retry runs nothing',
    async run({ store, fresh }) {
      const key = fresh('too-large')
      // A lease long enough for making and measuring 16 MiB on a loaded machine: a
      // store may let a claim without steps lapse with its lease (Redis does), and no
      // heartbeat runs while the outcome is measured. A key left held would answer the
      // retry ConflictError (waitMs 0), a key given up would run it again.
      const idem = createLeasedIdem({ store: store(), leaseMs: 10_000, waitMs: 0 })
      let runs = 0
      const fn = async () => {
        runs++
        return sizedValue(store().maxOutcomeBytes + 1)
      }
      await assert.rejects(idem.run({ scope: 'acct', key, input: 1 }, fn), OutcomeTooLargeError)
      await assert.rejects(idem.run({ scope: 'acct', key, input: 1 }, fn), OutcomeTooLargeError)
      assert.equal(runs, 1)
    },
  },
  {
    name: 'through the engine: a holder that died after a step is taken over, and the step is not run again',
    async run({ store, fresh, acquire }) {
      const key = fresh('resume')
      const dead = (await acquire('acct', key, fingerprintValue({ amount: 10 }), WRITING_LEASE_MS)).lease
      assert.equal(await dead.saveStep('charge', '{"chargeId":"ch_1"}'), true)
      // The dead holder never renews; the engine polls until its lease lapses.
      const idem = createLeasedIdem({ store: store(), leaseMs: 5_000, waitMs: 10_000 })
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
]
