import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createIdem } from '../../core/engine.js'
import { InFlightError } from '../../core/errors/in-flight.js'
import { OverranError } from '../../core/errors/overran.js'
import { createEventStream } from '../../core/events.js'
import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { peekOf } from '../key-peek.js'
import { resultFields } from '../result-fields.js'
import type { KeyStoreCase } from './kit.js'

/** Duplicates while a call runs, deadlines, identities, read paths and a store that is down. */
export const DUPLICATES: KeyStoreCase[] = [
  {
    name: 'a duplicate that will not wait gets InFlightError while the first runs, then a replay',
    async run({ harness, idem, fresh, latch }) {
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
    async run({ idem, fresh }) {
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
    async run({ harness, idem, fresh, latch }) {
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
    async run({ harness, fresh, latch }) {
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
    async run({ idem }) {
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
    async run({ harness, fresh }) {
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
    async run({ idem, fresh }) {
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
    async run({ harness, fresh }) {
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
