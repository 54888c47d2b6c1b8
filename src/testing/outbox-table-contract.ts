import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { StoreUnavailableError } from '../core/errors/store-unavailable.js'
import type { WithDeadLetterTable } from '../ports/dead-letter-table.js'
import type { OutboxInsert, WithOutboxTable } from '../ports/outbox-table.js'
import type { ContractCase } from './key-store-contract.js'

/** What a store author supplies to run the outbox-table contract against their store. */
export interface OutboxTableHarness<Tx> {
  /** A migrated store with an outbox table whose outbox is empty, isolated from other runs. */
  store: WithOutboxTable<Tx, boolean | Promise<boolean>> & Partial<WithDeadLetterTable>
  /** Runs `work` in a transaction of the store's database and commits it, or rolls it back when `work` throws. */
  inTransaction(work: (tx: Tx) => unknown): Promise<void>
  /** A store of the same kind whose backend is down. */
  unavailableStore(): WithOutboxTable<Tx, boolean | Promise<boolean>> | Promise<WithOutboxTable<Tx, boolean | Promise<boolean>>>
}

/**
 * The outbox-table contract (`OutboxTable` in `idem/queue`): rows queued with the
 * caller's transaction, claims that lease and skip, compare-and-set on the claim,
 * retries and dead letters. The cases share the harness's outbox one after another
 * (each drains what it queued), so run them in order, not concurrently.
 * @example
 * for (const c of outboxTableContract(() => harness)) it(c.name, c.run)
 */
export function outboxTableContract<Tx>(getHarness: () => OutboxTableHarness<Tx>): ContractCase[] {
  return CASES.map((outboxCase) => ({
    name: outboxCase.name,
    run: async () => {
      const kit = outboxKit(getHarness())
      try {
        await outboxCase.run(kit)
      } finally {
        await kit.drain()
      }
    },
  }))
}

/** What each outbox-table case runs with. */
interface OutboxKit<Tx> {
  readonly harness: OutboxTableHarness<Tx>
  table(): OutboxTableHarness<Tx>['store']['outbox']
  entry(topic: string, delayMs?: number): OutboxInsert
  sleep(ms: number): Promise<unknown>
  /** Claims and delivers everything due, so the next case starts from an empty outbox. */
  drain(): Promise<void>
}

/** One outbox-table case. */
interface OutboxCase {
  name: string
  run<Tx>(kit: OutboxKit<Tx>): Promise<void>
}

function outboxKit<Tx>(harness: OutboxTableHarness<Tx>): OutboxKit<Tx> {
  const table = () => harness.store.outbox
  return {
    harness,
    table,
    entry: (topic, delayMs = 0) => ({ topic, dedupeKey: randomUUID(), payload: JSON.stringify({ topic, n: 1 }), delayMs }),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    async drain() {
      for (let rows = await table().claim('drain', 1_000, 60_000, null); rows.length > 0; rows = await table().claim('drain', 1_000, 60_000, null)) {
        await table().delivered('drain', rows.map((row) => row.id))
      }
    },
  }
}

const CASES: OutboxCase[] = [
  {
    name: 'outbox: an add commits with its transaction; a second add of the same key changes nothing; a rolled-back add is gone',
    async run({ harness, table, entry }) {
      const topic = `t-${randomUUID()}`
      const first = entry(topic)
      const added: boolean[] = []
      await harness.inTransaction(async (tx) => {
        added.push(await table().add(tx, first))
        added.push(await table().add(tx, first))
      })
      await harness.inTransaction(async (tx) => void added.push(await table().add(tx, first)))
      await assert.rejects(
        harness.inTransaction(async (tx) => {
          await table().add(tx, entry(topic))
          throw new Error('rolled back')
        }),
        /rolled back/,
      )
      assert.deepEqual(added, [true, false, false])
      assert.equal(await table().pending(), 1)
      const rows = await table().claim('c1', 10, 60_000, null)
      assert.deepEqual(
        rows.map(({ topic, dedupeKey, payload, attempts, lastError }) => ({ topic, dedupeKey, payload, attempts, lastError })),
        [{ topic, dedupeKey: first.dedupeKey, payload: { topic, n: 1 }, attempts: 1, lastError: null }],
      )
      assert.ok(rows[0]!.createdAt instanceof Date)
      await table().delivered('c1', [rows[0]!.id])
      assert.equal(await table().pending(), 0)
    },
  },
  {
    name: 'outbox: a claim leases its rows: no other claim gets them until the lease ends; concurrent claims never share a row',
    async run({ harness, table, entry, sleep }) {
      await harness.inTransaction(async (tx) => {
        for (let i = 0; i < 40; i++) await table().add(tx, entry('lease'))
      })
      const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => table().claim(`claim-${i}`, 10, 600, null)))
      const ids = claims.flat().map((row) => row.id)
      assert.equal(ids.length, 40)
      assert.equal(new Set(ids).size, 40, 'no row in two claims')
      assert.deepEqual(await table().claim('late', 100, 600, null), [])
      await sleep(700)
      const again = await table().claim('after-lease', 100, 60_000, null)
      assert.equal(again.length, 40, 'a lease that ran out lets the rows be claimed again')
      assert.ok(again.every((row) => row.attempts === 2))
      await table().delivered('after-lease', again.map((row) => row.id))
    },
  },
  {
    name: 'outbox: renew, delivered, retry and deadLetter change a row only while the claim holds it',
    async run({ harness, table, entry, sleep }) {
      await harness.inTransaction(async (tx) => void (await table().add(tx, entry('cas'))))
      const [row] = await table().claim('old', 10, 300, null)
      assert.ok(row)
      await sleep(400)
      const [taken] = await table().claim('new', 10, 60_000, null)
      assert.equal(taken?.id, row.id)
      assert.deepEqual([...(await table().renew('old', [row.id], 60_000))], [])
      await table().delivered('old', [row.id])
      await table().retry('old', [{ id: row.id, delayMs: 0, error: 'stale' }])
      await table().deadLetter('old', [{ id: row.id, error: 'stale' }])
      assert.equal(await table().pending(), 1, 'the stale claim changed nothing')
      assert.deepEqual([...(await table().renew('new', [row.id], 60_000))], [row.id])
      await table().delivered('new', [row.id])
      assert.equal(await table().pending(), 0)
    },
  },
  {
    name: 'outbox: a retry ends the lease, keeps the error, and is due only after its delay; a delayed add likewise',
    async run({ harness, table, entry, sleep }) {
      await harness.inTransaction(async (tx) => {
        await table().add(tx, entry('retry'))
        await table().add(tx, entry('delayed', 400))
      })
      const rows = await table().claim('r1', 10, 60_000, null)
      assert.deepEqual(rows.map((row) => row.topic), ['retry'])
      await table().retry('r1', [{ id: rows[0]!.id, delayMs: 400, error: 'Error: receiver down' }])
      assert.deepEqual(await table().claim('r2', 10, 60_000, null), [])
      await sleep(500)
      const later = await table().claim('r3', 10, 60_000, null)
      assert.deepEqual(later.map((row) => [row.topic, row.attempts, row.lastError]).sort(), [
        ['delayed', 1, null],
        ['retry', 2, 'Error: receiver down'],
      ])
      await table().delivered('r3', later.map((row) => row.id))
    },
  },
  {
    name: 'outbox: a dead-lettered row leaves the outbox and joins the dead letters',
    async run({ harness, table, entry }) {
      const topic = `dead-${randomUUID()}`
      const dead = entry(topic)
      await harness.inTransaction(async (tx) => void (await table().add(tx, dead)))
      const [row] = await table().claim('d1', 10, 60_000, null)
      await table().deadLetter('d1', [{ id: row!.id, error: 'Error: gone for good' }])
      assert.equal(await table().pending(), 0)
      if (harness.store.deadLetters !== undefined) {
        const letters = await harness.store.deadLetters.list({ source: 'outbox', name: topic, limit: 10 })
        assert.deepEqual(
          letters.map(({ messageKey, payload, attempts, lastError }) => ({ messageKey, payload, attempts, lastError })),
          [{ messageKey: dead.dedupeKey, payload: { topic, n: 1 }, attempts: 1, lastError: 'Error: gone for good' }],
        )
      }
    },
  },
  {
    name: 'outbox: a store that is down fails with StoreUnavailableError',
    async run({ harness }) {
      const down = await harness.unavailableStore()
      await assert.rejects(down.outbox.claim('down', 10, 60_000, null), StoreUnavailableError)
      await assert.rejects(down.outbox.pending(), StoreUnavailableError)
    },
  },
]
