import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { WithOnceTable } from '../ports/once-table.js'
import type { ContractCase } from './key-store-contract.js'

/** What a store author supplies to run the once-table contract against their store. */
export interface OnceTableHarness<Tx> {
  store: WithOnceTable<Tx, boolean | Promise<boolean>>
  /** Runs `work` in a transaction of the store's database and commits it, or rolls it back when `work` throws. */
  inTransaction(work: (tx: Tx) => unknown): Promise<void>
  /** False for a database with one writer at a time (SQLite): the concurrent case is then left out. */
  concurrentTransactions: boolean
}

/**
 * The once-table contract (`OnceTable` in `idem/data`): a first-time mark per pair, written with the caller's transaction.
 * @example
 * for (const c of onceTableContract(() => harness)) it(c.name, c.run)
 */
export function onceTableContract<Tx>(getHarness: () => OnceTableHarness<Tx>): ContractCase[] {
  let harness!: OnceTableHarness<Tx>
  const mark = (tx: Tx, kind: string, subject: string) => harness.store.once.mark(tx, kind, subject)
  const cases: Array<ContractCase & { concurrent?: true }> = [
    {
      name: 'once: true the first time a pair is marked, false ever after; other kinds and subjects are apart',
      async run() {
        const subject = randomUUID()
        const seen: boolean[] = []
        await harness.inTransaction(async (tx) => {
          seen.push(await mark(tx, 'email', subject), await mark(tx, 'email', subject), await mark(tx, 'sms', subject), await mark(tx, 'email', `${subject}-2`))
        })
        await harness.inTransaction(async (tx) => void seen.push(await mark(tx, 'email', subject)))
        assert.deepEqual(seen, [true, false, true, true, false])
      },
    },
    {
      name: 'once: a rolled-back transaction forgets its mark',
      async run() {
        const subject = randomUUID()
        await assert.rejects(
          harness.inTransaction(async (tx) => {
            assert.equal(await mark(tx, 'email', subject), true)
            throw new Error('rolled back')
          }),
          /rolled back/,
        )
        let again: boolean | undefined
        await harness.inTransaction(async (tx) => void (again = await mark(tx, 'email', subject)))
        assert.equal(again, true)
      },
    },
    {
      name: 'once: a concurrent transaction marking the same pair waits for the first, and gets false after its commit',
      concurrent: true,
      async run() {
        const subject = randomUUID()
        let release!: () => void
        const held = new Promise<void>((resolve) => (release = resolve))
        let firstMarked!: () => void
        const marked = new Promise<void>((resolve) => (firstMarked = resolve))
        const first = harness.inTransaction(async (tx) => {
          assert.equal(await mark(tx, 'email', subject), true)
          firstMarked()
          await held
        })
        await marked
        let second: boolean | undefined
        const waiting = harness.inTransaction(async (tx) => void (second = await mark(tx, 'email', subject)))
        await new Promise((resolve) => setTimeout(resolve, 50))
        assert.equal(second, undefined, 'the second waits for the first')
        release()
        await first
        await waiting
        assert.equal(second, false)
      },
    },
  ]
  return cases.map(({ name, run, concurrent }) => ({
    name,
    run: async () => {
      harness = getHarness()
      if (concurrent && !harness.concurrentTransactions) return
      await run()
    },
  }))
}
