import assert from 'node:assert/strict'
import { FingerprintMismatchError } from '../../core/errors/fingerprint-mismatch.js'
import { OutcomeNotSerializableError } from '../../core/errors/outcome-not-serializable.js'
import { OutcomeTooLargeError } from '../../core/errors/outcome-too-large.js'
import { discard } from '../../core/result.js'
import { sizedValue } from '../sized-value.js'
import { resultFields } from '../result-fields.js'
import type { KeyStoreCase, KeyStoreKit } from './kit.js'

/** Runs, replays and rollbacks: what one call stores, and what it does not. */
export const CALLS: KeyStoreCase[] = [
  {
    name: 'a first call runs the function and stores its outcome; a repeat replays it without running',
    async run({ harness, idem, fresh, body }) {
      const key = fresh('replay')
      const { calls, fn } = body(key, { orderId: 42, items: ['a', 'b'] })
      const first = await idem.run({ scope: 'acct', key, input: { amount: 10 } }, fn)
      const second = await idem.run({ scope: 'acct', key, input: { amount: 10 } }, fn)
      assert.equal(calls.count, 1)
      assert.deepEqual(resultFields(first), { value: { orderId: 42, items: ['a', 'b'] }, replayed: false, stored: true })
      assert.deepEqual(resultFields(second), { value: { orderId: 42, items: ['a', 'b'] }, replayed: true, stored: true })
      assert.equal(await harness.countEffects(key), 1)
    },
  },
  {
    name: 'the same key with a different request is a FingerprintMismatchError and runs nothing',
    async run({ harness, idem, fresh, body }) {
      const key = fresh('mismatch')
      const { calls, fn } = body(key, 'ok')
      await idem.run({ scope: 'acct', key, input: { amount: 10 } }, fn)
      await assert.rejects(idem.run({ scope: 'acct', key, input: { amount: 11 } }, fn), FingerprintMismatchError)
      assert.equal(calls.count, 1)
      assert.equal(await harness.countEffects(key), 1)
    },
  },
  {
    name: 'the same key in two scopes gives two independent executions',
    async run({ harness, idem, fresh }) {
      const key = fresh('scopes')
      const a = await idem.run({ scope: 'tenant-a', key, input: 1 }, async (tx) => {
        await harness.writeEffect(tx, `${key}-a`)
        return 'secret of A'
      })
      const b = await idem.run({ scope: 'tenant-b', key, input: 1 }, async (tx) => {
        await harness.writeEffect(tx, `${key}-b`)
        return 'secret of B'
      })
      assert.equal(a.value, 'secret of A')
      assert.equal(b.value, 'secret of B')
      assert.equal(b.replayed, false)
      const again = await idem.run({ scope: 'tenant-b', key, input: 1 }, async () => 'never')
      assert.deepEqual(resultFields(again), { value: 'secret of B', replayed: true, stored: true })
    },
  },
  {
    name: 'an expired key counts as new',
    async run({ idem, fresh, body }) {
      const key = fresh('expiry')
      const { calls, fn } = body(key, 'v')
      // The replay must come within the key's time, however slow the machine: a second.
      await idem.run({ scope: 'acct', key, input: 1, ttlMs: 1_000 }, fn)
      const early = await idem.run({ scope: 'acct', key, input: 1, ttlMs: 1_000 }, fn)
      assert.equal(early.replayed, true)
      await sleep(2_100) // Postgres' now() and SQLite's clock both move past it
      const late = await idem.run({ scope: 'acct', key, input: 2, ttlMs: 1_000 }, fn)
      assert.equal(late.replayed, false, 'an expired key is new, even with a different request')
      assert.equal(calls.count, 2)
    },
  },
  {
    name: '200 concurrent calls with one key: the function runs once and all get the same outcome',
    async run({ harness, idem, fresh, body }) {
      const key = fresh('c200')
      const { calls, fn } = body(key, { receipt: key })
      const results = await Promise.all(
        Array.from({ length: 200 }, () =>
          idem.run({ scope: 'acct', key, input: { n: 1 } }, async (tx) => {
            const value = await fn(tx)
            await sleep(20) // hold the key long enough for real contention
            return value
          }),
        ),
      )
      assert.equal(calls.count, 1)
      for (const result of results) assert.deepEqual(result.value, { receipt: key })
      assert.equal(results.filter((r) => !r.replayed).length, 1)
      assert.equal(await harness.countEffects(key), 1)
    },
  },
  {
    name: '20 keys × 50 concurrent calls: each key runs once',
    async run({ harness, idem, fresh }) {
      const keys = Array.from({ length: 20 }, (_, i) => fresh(`k${i}`))
      const runs = new Map<string, number>()
      const calls = keys.flatMap((key) =>
        Array.from({ length: 50 }, () =>
          idem.run({ scope: 'acct', key, input: key }, async (tx) => {
            runs.set(key, (runs.get(key) ?? 0) + 1)
            await harness.writeEffect(tx, key)
            return key
          }),
        ),
      )
      const results = await Promise.all(calls)
      results.forEach((result, i) => assert.equal(result.value, keys[Math.floor(i / 50)]))
      for (const key of keys) {
        assert.equal(runs.get(key), 1, `key ${key} ran ${runs.get(key)} times`)
        assert.equal(await harness.countEffects(key), 1)
      }
    },
  },
  {
    name: 'a thrown error rolls back the effect and the key together; the retry runs',
    async run<Tx>({ harness, idem, fresh }: KeyStoreKit<Tx>) {
      const key = fresh('throw')
      let attempts = 0
      const fn = async (tx: Tx): Promise<string> => {
        attempts++
        await harness.writeEffect(tx, key)
        if (attempts === 1) throw new Error('boom after the write')
        return 'second time lucky'
      }
      await assert.rejects(idem.run({ scope: 'acct', key, input: 1 }, fn), /boom after the write/)
      assert.equal(await harness.countEffects(key), 0)
      const retry = await idem.run({ scope: 'acct', key, input: 1 }, fn)
      assert.deepEqual(resultFields(retry), { value: 'second time lucky', replayed: false, stored: true })
      assert.equal(await harness.countEffects(key), 1)
    },
  },
  {
    name: 'an outcome without a JSON form is refused and rolled back',
    async run({ harness, idem, fresh }) {
      const key = fresh('unserialisable')
      await assert.rejects(
        idem.run({ scope: 'acct', key, input: 1 }, async (tx) => {
          await harness.writeEffect(tx, key)
          return { amount: 10n }
        }),
        (error: unknown) => error instanceof OutcomeNotSerializableError && /BigInt at "amount"/.test(error.message),
      )
      assert.equal(await harness.countEffects(key), 0)
      const retry = await idem.run({ scope: 'acct', key, input: 1 }, async () => 'fixed')
      assert.equal(retry.replayed, false)
    },
  },
  {
    name: 'an outcome of exactly maxOutcomeBytes is stored and replayed whole; one byte more is OutcomeTooLargeError and rolled back',
    async run({ harness, idem, fresh }) {
      const max = harness.store.maxOutcomeBytes
      const key = fresh('largest')
      const largest = sizedValue(max)
      const first = await idem.run({ scope: 'acct', key, input: 1 }, async (tx) => {
        await harness.writeEffect(tx, key)
        return largest
      })
      const replay = await idem.run({ scope: 'acct', key, input: 1 }, async () => 'never')
      // Compared without assert.equal, whose message would print both values.
      assert.ok(first.value === largest && replay.replayed && replay.value === largest, `an outcome of ${max} bytes did not replay whole`)
      assert.equal(await harness.countEffects(key), 1)

      const over = fresh('too-large')
      await assert.rejects(
        idem.run({ scope: 'acct', key: over, input: 1 }, async (tx) => {
          await harness.writeEffect(tx, over)
          return sizedValue(max + 1)
        }),
        (error: unknown) => error instanceof OutcomeTooLargeError && error.outcomeBytes === max + 1,
      )
      assert.equal(await harness.countEffects(over), 0)
    },
  },
  {
    name: 'a discarded outcome is rolled back and returned unstored',
    async run<Tx>({ harness, idem, fresh, body }: KeyStoreKit<Tx>) {
      const key = fresh('not-stored')
      const { calls, fn } = body(key, { status: 503 })
      const unless5xx = async (tx: Tx) => {
        const value = await fn(tx)
        return value.status < 500 ? value : discard(value)
      }
      const first = await idem.run({ scope: 'acct', key, input: 1 }, unless5xx)
      assert.deepEqual(resultFields(first), { value: { status: 503 }, replayed: false, stored: false })
      assert.equal(await harness.countEffects(key), 0)
      await idem.run({ scope: 'acct', key, input: 1 }, unless5xx)
      assert.equal(calls.count, 2)
    },
  },
]

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
