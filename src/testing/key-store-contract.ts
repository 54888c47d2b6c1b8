import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createIdem, type Idem } from '../core/engine.js'
import { FingerprintMismatchError } from '../core/errors/fingerprint-mismatch.js'
import { InFlightError } from '../core/errors/in-flight.js'
import { OverranError } from '../core/errors/overran.js'
import { createEventStream } from '../core/events.js'
import { OutcomeNotSerializableError } from '../core/errors/outcome-not-serializable.js'
import { OutcomeTooLargeError } from '../core/errors/outcome-too-large.js'
import { StoreUnavailableError } from '../core/errors/store-unavailable.js'
import { discard } from '../core/result.js'
import type { KeyStore } from '../core/store.js'
import { peekOf } from './key-peek.js'
import { sizedValue } from './sized-value.js'
import { resultFields } from './result-fields.js'

/** What a store author supplies to run the contract against their store. */
export interface StoreHarness<Tx> {
  /** A migrated store, isolated from other test runs (its own schema, file or prefix). */
  store: KeyStore<Tx>
  /** Writes one effect row tagged `id` through the transaction. */
  writeEffect(tx: Tx, id: string): void | Promise<void>
  /** Counts committed effect rows tagged `id`. */
  countEffects(id: string): number | Promise<number>
  /** A store of the same kind whose backend is down (closed pool, closed file, closed port). */
  unavailableStore(): KeyStore<Tx> | Promise<KeyStore<Tx>>
}

/**
 * One case of a contract suite: a name and a function that throws when the store breaks
 * the contract.
 */
export interface ContractCase {
  name: string
  /** Runs the case; rejects when the store breaks the contract. */
  run(): Promise<void>
}

type Case = ContractCase

/**
 * The key-store contract (the `KeyStore` port the transactional engine runs on): the
 * behaviour every idem store must have, as plain cases that any test runner can run
 * (`for (const c of keyStoreContract(h)) it(c.name, c.run)`). Each case uses fresh random
 * keys, so cases may share one harness and reruns never collide. `getHarness` is called
 * when a case runs, so the harness may be built in a beforeAll hook.
 * @example
 * for (const c of keyStoreContract<PgClient>(() => ({
 *   store,
 *   unavailableStore: () => downStore,
 *   writeEffect: (tx, id) => tx.query('INSERT INTO effects (id) VALUES ($1)', [id]).then(() => {}),
 *   countEffects: async (id) => (await pool.query('SELECT count(*)::int AS n FROM effects WHERE id = $1', [id])).rows[0].n,
 * }))) it(c.name, c.run)
 */
export function keyStoreContract<Tx>(getHarness: () => StoreHarness<Tx>): ContractCase[] {
  // Resolved when a case runs, so the harness may be built in a beforeAll hook.
  let harness!: StoreHarness<Tx>
  let idem!: Idem<Tx>
  const setUp = (): void => {
    harness = getHarness()
    idem = createIdem({ store: harness.store, waitMs: 30_000 })
  }
  const fresh = (label: string): string => `${label}-${randomUUID()}`

  /** A function body that counts its runs and writes one effect. */
  function body<T>(effect: string, value: T) {
    const calls = { count: 0 }
    const fn = async (tx: Tx): Promise<T> => {
      calls.count++
      await harness.writeEffect(tx, effect)
      return value
    }
    return { calls, fn }
  }

  function latch(): { wait: Promise<void>; open: () => void } {
    let open!: () => void
    const wait = new Promise<void>((resolve) => (open = resolve))
    return { wait, open }
  }

  const cases: Case[] = [
    {
      name: 'a first call runs the function and stores its outcome; a repeat replays it without running',
      async run() {
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
      async run() {
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
      async run() {
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
      async run() {
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
      async run() {
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
      async run() {
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
      async run() {
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
      async run() {
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
      async run() {
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
      async run() {
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
    {
      name: 'a duplicate that will not wait gets InFlightError while the first runs, then a replay',
      async run() {
        const key = fresh('inflight')
        const hold = latch()
        const started = latch()
        const first = idem.run({ scope: 'acct', key, input: 1 }, async (tx) => {
          await harness.writeEffect(tx, key)
          started.open()
          await hold.wait
          return 'first'
        })
        await started.wait
        await assert.rejects(
          idem.run({ scope: 'acct', key, input: 1, waitMs: 0 }, async () => 'second'),
          (error: unknown) => error instanceof InFlightError && error.retryAfterSeconds === 1,
        )
        await assert.rejects(idem.run({ scope: 'acct', key, input: 1, waitMs: 50 }, async () => 'third'), InFlightError)
        hold.open()
        assert.equal((await first).value, 'first')
        assert.deepEqual(resultFields(await idem.run({ scope: 'acct', key, input: 1, waitMs: 0 }, async () => 'later')), {
          value: 'first',
          replayed: true,
          stored: true,
        })
        assert.equal(await harness.countEffects(key), 1)
      },
    },
    {
      name: 'concurrent replays of a stored key never wait for one another (50 at once, waitMs 0)',
      async run() {
        const key = fresh('replays')
        await idem.run({ scope: 'acct', key, input: 1 }, async () => 'stored')
        const results = await Promise.allSettled(
          Array.from({ length: 50 }, () => idem.run({ scope: 'acct', key, input: 1, waitMs: 0 }, async () => 'never')),
        )
        for (const result of results) {
          assert.equal(result.status, 'fulfilled', result.status === 'rejected' ? String(result.reason) : '')
          if (result.status === 'fulfilled') assert.deepEqual(result.value, { value: 'stored', replayed: true, stored: true })
        }
      },
    },
    {
      name: 'a waiting duplicate replays when the first commits, and runs when the first fails',
      async run() {
        for (const firstFails of [false, true]) {
          const key = fresh(firstFails ? 'wait-fail' : 'wait-ok')
          const hold = latch()
          const started = latch()
          const first = idem.run({ scope: 'acct', key, input: 1 }, async (tx) => {
            await harness.writeEffect(tx, key)
            started.open()
            await hold.wait
            if (firstFails) throw new Error('first failed')
            return 'first'
          })
          await started.wait
          const second = idem.run({ scope: 'acct', key, input: 1, waitMs: 10_000 }, async (tx) => {
            await harness.writeEffect(tx, key)
            return 'second'
          })
          await sleep(50)
          hold.open()
          await (firstFails ? assert.rejects(first) : first)
          assert.deepEqual(resultFields(await second), { value: firstFails ? 'second' : 'first', replayed: !firstFails, stored: true })
          assert.equal(await harness.countEffects(key), 1)
        }
      },
    },
    {
      name: 'a function past deadlineMs: abandoned (OverranError, the key free at once, its late write refused) or, where the store cannot end it, kept until it ends with an overran-held warning',
      async run() {
        const key = fresh('deadline')
        const events = createEventStream()
        const heldWarning = latch()
        events.subscribe((event) => {
          if (event.type === 'warning' && event.code === 'overran-held') heldWarning.open()
        })
        const bounded = createIdem({ store: harness.store, waitMs: 30_000, deadlineMs: 50, events })
        const hold = latch()
        let late: unknown = 'not tried'
        const lateDone = latch()
        const first = bounded.run({ scope: 'acct', key, input: 1 }, async (tx) => {
          await harness.writeEffect(tx, `${key}-first`)
          await hold.wait
          try {
            await harness.writeEffect(tx, `${key}-late`)
            late = 'written'
          } catch (error) {
            late = error
          }
          lateDone.open()
          return 'first'
        })
        const outcome = await Promise.race([first.then(() => 'settled', (error: unknown) => error), heldWarning.wait.then(() => 'held')])
        if (outcome === 'held') {
          // The store kept the session: the function ends it, as without a deadline.
          hold.open()
          assert.deepEqual(resultFields(await first), { value: 'first', replayed: false, stored: true })
          assert.equal(await harness.countEffects(`${key}-late`), 1)
          return
        }
        assert.ok(outcome instanceof OverranError, `expected OverranError or an overran-held warning, got ${String(outcome)}`)
        assert.equal(outcome.retryAfterSeconds, 1)
        // The key is free at once: the retry runs while the first function still holds on.
        assert.deepEqual(resultFields(await bounded.run({ scope: 'acct', key, input: 1, waitMs: 0 }, async () => 'retry')), { value: 'retry', replayed: false, stored: true })
        hold.open()
        await lateDone.wait
        assert.notEqual(late, 'written', 'a write through an abandoned transaction must fail')
        assert.equal(await harness.countEffects(`${key}-first`), 0)
        assert.equal(await harness.countEffects(`${key}-late`), 0)
      },
    },
    {
      name: 'awkward keys and scopes are stored exactly and kept apart',
      async run() {
        const suffix = randomUUID().slice(0, 8)
        const keys = ['__proto__', 'constructor', `q"u'o\\te;${suffix}`, 'x'.repeat(247) + suffix, `%00%27${suffix}`]
        const scopes = ['acct', `ünïcödé-🧾-${suffix}`, `s`.repeat(1000) + suffix]
        for (const scope of scopes) {
          for (const key of keys) {
            const first = await idem.run({ scope, key, input: 1 }, async () => `${scope}|${key}`)
            const again = await idem.run({ scope, key, input: 1 }, async () => 'never')
            if (key.includes(suffix) || scope.includes(suffix)) assert.equal(first.replayed, false)
            assert.equal(again.value, first.value)
            assert.equal(again.replayed, true)
          }
        }
      },
    },
    {
      name: 'a record reads back exactly as committed through every read path: the claim, and peek where the store has it (KeyPeek)',
      async run() {
        const { store } = harness
        const peek = peekOf(store)
        const key = fresh('read-back')
        const record = { fingerprint: 'fp-read-back', outcome: JSON.stringify({ text: 'ω "quoted" \\', lines: [1, 2] }) }
        if (peek) assert.deepEqual(await peek('acct', key), { state: 'absent' })
        const session = await store.begin({ scope: 'acct', key, waitMs: 0 })
        assert.equal(session.claim.state, 'new')
        try {
          if (peek) assert.deepEqual(await peek('acct', key), { state: 'held' })
        } catch (error) {
          await session.rollback()
          throw error
        }
        await session.commit({ ...record, ttlMs: 60_000 })
        const again = await store.begin({ scope: 'acct', key, waitMs: 0 })
        await again.rollback()
        assert.deepEqual(again.claim, { state: 'found', record })
        if (peek) assert.deepEqual(await peek('acct', key), { state: 'completed', record })
      },
    },
    {
      name: 'a stored outcome is immune to later mutation by the caller',
      async run() {
        const key = fresh('immutable')
        const original = { lines: [{ sku: 'a', qty: 1 }] }
        const first = await idem.run({ scope: 'acct', key, input: 1 }, async () => original)
        original.lines[0]!.qty = 99
        ;(first.value as typeof original).lines.push({ sku: 'z', qty: 0 })
        const replay = await idem.run({ scope: 'acct', key, input: 1 }, async () => original)
        assert.deepEqual(replay.value, { lines: [{ sku: 'a', qty: 1 }] })
      },
    },
    {
      name: 'a store that is down fails with StoreUnavailableError and runs nothing',
      async run() {
        const down = createIdem({ store: await harness.unavailableStore(), waitMs: 1_000 })
        let ran = false
        await assert.rejects(
          down.run({ scope: 'acct', key: fresh('down'), input: 1 }, async () => {
            ran = true
          }),
          StoreUnavailableError,
        )
        assert.equal(ran, false)
      },
    },
  ]
  return cases.map(({ name, run }) => ({
    name,
    run: async () => {
      setUp()
      await run()
    },
  }))
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
