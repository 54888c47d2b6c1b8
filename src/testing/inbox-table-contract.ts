import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { StoreUnavailableError } from '../core/errors/store-unavailable.js'
import type { WithDeadLetterTable } from '../ports/dead-letter-table.js'
import type { InboxSession, WithInboxTable } from '../ports/inbox-table.js'
import type { ContractCase } from './key-store-contract.js'

/** What a store author supplies to run the inbox-table contract against their store. */
export interface InboxTableHarness<Tx> {
  /** A migrated store with an inbox table, isolated from other runs; with `deadLetters` too, they are checked. */
  store: WithInboxTable<Tx> & Partial<WithDeadLetterTable>
  /** Writes one effect row tagged `id` through the transaction. */
  writeEffect(tx: Tx, id: string): void | Promise<void>
  /** Counts committed effect rows tagged `id`. */
  countEffects(id: string): number | Promise<number>
  /** A store of the same kind whose backend is down. */
  unavailableStore(): WithInboxTable<Tx> | Promise<WithInboxTable<Tx>>
}

/**
 * The inbox-table contract (`InboxTable` in `idem/queue`): a message id claimed, written
 * and committed with the handler's effects; mutual exclusion of deliveries; expiry;
 * failure counts outside the handler's transaction; dead letters. Plain cases, as
 * `keyStoreContract`'s.
 * @example
 * for (const c of inboxTableContract(() => harness)) it(c.name, c.run)
 */
export function inboxTableContract<Tx>(getHarness: () => InboxTableHarness<Tx>): ContractCase[] {
  return CASES.map((inboxCase) => ({ name: inboxCase.name, run: () => inboxCase.run(inboxKit(getHarness())) }))
}

/** What each inbox-table case runs with. */
interface InboxKit<Tx> {
  readonly harness: InboxTableHarness<Tx>
  fresh(label: string): string
  begin(consumer: string, key: string, options?: { waitMs?: number; retentionMs?: number }): Promise<InboxSession<Tx>>
  /** One delivery that writes its effect and commits. */
  deliverOnce(consumer: string, key: string, options?: { waitMs?: number; retentionMs?: number }): Promise<InboxSession<Tx>['state']>
}

/** One inbox-table case. */
interface InboxCase {
  name: string
  run<Tx>(kit: InboxKit<Tx>): Promise<void>
}

function inboxKit<Tx>(harness: InboxTableHarness<Tx>): InboxKit<Tx> {
  const begin = (consumer: string, key: string, { waitMs = 10_000, retentionMs = 60_000 } = {}) => harness.store.inbox.begin({ consumer, key, waitMs, retentionMs })
  return {
    harness,
    fresh: (label) => `${label}-${randomUUID()}`,
    begin,
    async deliverOnce(consumer, key, options) {
      const session = await begin(consumer, key, options)
      if (session.state === 'new') {
        await harness.writeEffect(session.tx, key)
        await session.commit()
      }
      return session.state
    },
  }
}

const CASES: InboxCase[] = [
  {
    name: 'inbox: a new id is processed with its effect; a redelivery finds it processed and writes nothing',
    async run({ harness, fresh, deliverOnce }) {
      const key = fresh('once')
      assert.equal(await deliverOnce('worker', key), 'new')
      assert.equal(await deliverOnce('worker', key), 'processed')
      assert.equal(await harness.countEffects(key), 1)
      // Another consumer has ids of its own.
      assert.equal(await deliverOnce('other-worker', key), 'new')
    },
  },
  {
    name: 'inbox: 100 concurrent deliveries of one id process it once; a rolled-back delivery leaves no id and no effect',
    async run({ harness, fresh, begin, deliverOnce }) {
      const key = fresh('c100')
      const states = await Promise.all(
        Array.from({ length: 100 }, async () => {
          const session = await begin('worker', key)
          if (session.state === 'new') {
            await harness.writeEffect(session.tx, key)
            await new Promise((resolve) => setTimeout(resolve, 20))
            await session.commit()
          }
          return session.state
        }),
      )
      assert.equal(states.filter((s) => s === 'new').length, 1)
      assert.equal(states.filter((s) => s === 'processed').length, 99)
      assert.equal(await harness.countEffects(key), 1)

      const rolled = fresh('rollback')
      const session = await begin('worker', rolled)
      assert.equal(session.state, 'new')
      await harness.writeEffect(session.tx, rolled)
      await session.rollback()
      assert.equal(await harness.countEffects(rolled), 0)
      assert.equal(await deliverOnce('worker', rolled), 'new', 'the retry runs again')
      assert.equal(await harness.countEffects(rolled), 1)
    },
  },
  {
    name: 'inbox: a delivery that will not wait is in-flight while another holds the id; one that waits finds it processed',
    async run({ harness, fresh, begin }) {
      const key = fresh('inflight')
      const first = await begin('worker', key)
      assert.equal(first.state, 'new')
      await harness.writeEffect(first.tx, key)
      assert.equal((await begin('worker', key, { waitMs: 0 })).state, 'in-flight')
      const waiting = begin('worker', key, { waitMs: 10_000 })
      await new Promise((resolve) => setTimeout(resolve, 50))
      await first.commit()
      assert.equal((await waiting).state, 'processed')
      assert.equal(await harness.countEffects(key), 1)
    },
  },
  {
    name: 'inbox: an abandoned delivery (its handler past the deadline) frees the id at once and commits nothing, whatever the handler writes later',
    async run({ harness, fresh, begin, deliverOnce }) {
      const key = fresh('abandon')
      const session = await begin('worker', key)
      assert.equal(session.state, 'new')
      // A table that cannot fence off late writes leaves abandon out; the inbox then waits for the handler.
      if (session.abandon === undefined) return session.rollback()
      await harness.writeEffect(session.tx, key)
      await session.abandon()
      assert.equal(await deliverOnce('worker', key, { waitMs: 0 }), 'new')
      try {
        await harness.writeEffect(session.tx, `${key}-late`)
      } catch {
        // Refused, as it should be; a table that stages writes may also just never send them.
      }
      await session.rollback()
      assert.equal(await harness.countEffects(key), 1)
      assert.equal(await harness.countEffects(`${key}-late`), 0)
    },
  },
  {
    name: 'inbox: an id is forgotten after its retention, and is new again',
    async run({ harness, fresh, deliverOnce }) {
      const key = fresh('expiry')
      assert.equal(await deliverOnce('worker', key, { retentionMs: 40 }), 'new')
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      assert.equal(await deliverOnce('worker', key, { retentionMs: 40 }), 'new')
      assert.equal(await harness.countEffects(key), 2)
    },
  },
  {
    name: 'inbox: awkward ids and consumers are kept exactly and apart',
    async run({ deliverOnce }) {
      const suffix = randomUUID().slice(0, 8)
      const keys = ['__proto__', 'constructor', `q"u'o\\te;${suffix}`, 'x'.repeat(247) + suffix, `%00%27${suffix}`]
      const consumers = ['worker', `ünïcödé-🧾-${suffix}`, 'c'.repeat(200)]
      for (const consumer of consumers) {
        for (const key of keys) {
          const state = await deliverOnce(consumer, key)
          if (key.includes(suffix) || consumer.includes(suffix)) assert.equal(state, 'new')
          assert.equal(await deliverOnce(consumer, key), 'processed')
        }
      }
    },
  },
  {
    name: 'inbox: failures are counted on their own, concurrently without loss, and taken only by a committed delivery',
    async run({ harness, fresh, begin }) {
      const key = fresh('failures')
      const counts = await Promise.all(Array.from({ length: 20 }, (_, i) => harness.store.inbox.recordFailure('worker', key, `error ${i}`)))
      assert.deepEqual([...counts].sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1))
      const rolledBack = await begin('worker', key)
      const seen = await rolledBack.takeFailures()
      assert.equal(seen?.attempts, 20)
      assert.match(seen!.lastError, /^error \d+$/)
      await rolledBack.rollback()
      const committed = await begin('worker', key)
      assert.equal((await committed.takeFailures())?.attempts, 20, 'a rolled-back take leaves the count')
      await committed.commit()
      assert.equal(await harness.store.inbox.recordFailure('worker', key, 'again'), 1, 'a committed take removed it')
    },
  },
  {
    name: 'inbox: a dead letter commits with the id, and is listed with the dead letters',
    async run({ harness, fresh, begin, deliverOnce }) {
      const key = fresh('dead')
      const session = await begin('dead-worker', key)
      await session.deadLetter({ payload: JSON.stringify({ claim: 7 }), attempts: 3, error: 'Error: poison', firstSeenAt: new Date(Date.now() - 60_000) })
      await session.commit()
      assert.equal(await deliverOnce('dead-worker', key), 'processed')
      if (harness.store.deadLetters !== undefined) {
        const letters = await harness.store.deadLetters.list({ source: 'inbox', name: 'dead-worker', limit: 100 })
        const letter = letters.find((l) => l.messageKey === key)
        assert.ok(letter, 'the dead letter is listed')
        assert.deepEqual({ payload: letter.payload, attempts: letter.attempts, lastError: letter.lastError }, { payload: { claim: 7 }, attempts: 3, lastError: 'Error: poison' })
        assert.ok(letter.firstSeenAt.getTime() < letter.deadAt.getTime())
      }
    },
  },
  {
    name: 'inbox: a store that is down fails with StoreUnavailableError',
    async run({ harness, fresh }) {
      const down = await harness.unavailableStore()
      await assert.rejects(down.inbox.begin({ consumer: 'worker', key: fresh('down'), waitMs: 1_000, retentionMs: 60_000 }), StoreUnavailableError)
      await assert.rejects(down.inbox.recordFailure('worker', fresh('down'), 'e'), StoreUnavailableError)
    },
  },
]
