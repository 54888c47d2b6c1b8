import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { WithOnceTable } from '../ports/once-table.js'
import type { ContractCase } from './key-store-contract.js'

/** What a store author supplies to run the once-table contract against their store. */
export interface OnceTableHarness<Tx> {
  store: WithOnceTable<Tx, boolean | Promise<boolean>>
  /** Runs `work` in a transaction of the store's database and commits it, or rolls it back when `work` throws. */
  inTransaction(work: (tx: Tx) => unknown): Promise<void>
  /** False for a database with one writer at a time (SQLite): the concurrent cases are then left out. */
  concurrentTransactions: boolean
}

/** How long two transactions crossing marks may wait on each other before the contract fails. */
const CROSSED_BOUND_MS = 30_000

/** One case of the contract, over any store's harness. */
interface OnceCase {
  name: string
  /** Needs two transactions open at once. */
  concurrent?: true
  run<Tx>(harness: OnceTableHarness<Tx>): Promise<void>
}

const mark = <Tx>({ store }: OnceTableHarness<Tx>, tx: Tx, kind: string, subject: string) => store.once.mark(tx, kind, subject)

const CASES: readonly OnceCase[] = [
  {
    name: 'once: true the first time a pair is marked, false ever after; other kinds and subjects are apart',
    async run(harness) {
      const subject = randomUUID()
      const seen: boolean[] = []
      await harness.inTransaction(async (tx) => {
        seen.push(
          await mark(harness, tx, 'email', subject),
          await mark(harness, tx, 'email', subject),
          await mark(harness, tx, 'sms', subject),
          await mark(harness, tx, 'email', `${subject}-2`),
        )
      })
      await harness.inTransaction(async (tx) => void seen.push(await mark(harness, tx, 'email', subject)))
      assert.deepEqual(seen, [true, false, true, true, false])
    },
  },
  {
    name: 'once: a rolled-back transaction forgets its mark',
    async run(harness) {
      const subject = randomUUID()
      await assert.rejects(
        harness.inTransaction(async (tx) => {
          assert.equal(await mark(harness, tx, 'email', subject), true)
          throw new Error('rolled back')
        }),
        /rolled back/,
      )
      let again: boolean | undefined
      await harness.inTransaction(async (tx) => void (again = await mark(harness, tx, 'email', subject)))
      assert.equal(again, true)
    },
  },
  {
    name: 'once: a concurrent transaction marking the same pair waits for the first, and gets false after its commit',
    concurrent: true,
    async run(harness) {
      const subject = randomUUID()
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      let firstMarked!: () => void
      const marked = new Promise<void>((resolve) => (firstMarked = resolve))
      const first = harness.inTransaction(async (tx) => {
        assert.equal(await mark(harness, tx, 'email', subject), true)
        firstMarked()
        await held
      })
      await marked
      let second: boolean | undefined
      const waiting = harness.inTransaction(async (tx) => void (second = await mark(harness, tx, 'email', subject)))
      await new Promise((resolve) => setTimeout(resolve, 50))
      assert.equal(second, undefined, 'the second waits for the first')
      release()
      await first
      await waiting
      assert.equal(second, false)
    },
  },
  {
    name: `once: two transactions crossing marks (each holds one the other asks for) end within ${CROSSED_BOUND_MS / 1000} s: one commits both, the other is refused and writes nothing`,
    concurrent: true,
    run: crossedMarksEnd,
  },
]

/**
 * A marks u1 then u2, B marks u2 then u1, each asking for its second once both hold
 * their first: a deadlock on a database with a lock manager (which refuses one), and a
 * wait with no end on a store that only polls unless it bounds the wait.
 */
async function crossedMarksEnd<Tx>(harness: OnceTableHarness<Tx>): Promise<void> {
  const [u1, u2] = [randomUUID(), randomUUID()]
  let holding = 0
  let bothHold!: () => void
  const both = new Promise<void>((resolve) => (bothHold = resolve))
  const committed: boolean[][] = []
  const crossing = (first: string, second: string) =>
    harness.inTransaction(async (tx) => {
      const marks = [await mark(harness, tx, 'email', first)]
      if (++holding === 2) bothHold()
      await both
      marks.push(await mark(harness, tx, 'email', second))
      committed.push(marks)
    })
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`two transactions crossing marks still wait on each other after ${CROSSED_BOUND_MS} ms`)), CROSSED_BOUND_MS)
  })
  const ends = await Promise.race([Promise.allSettled([crossing(u1, u2), crossing(u2, u1)]), late]).finally(() => clearTimeout(timer))
  assert.deepEqual(ends.map((end) => end.status).sort(), ['fulfilled', 'rejected'], 'one side commits, the other is refused')
  assert.deepEqual(committed, [[true, true]], 'the side that commits marks both pairs')
  // The refused side's retry passes neither gate: both marks are the committed side's.
  const retried: boolean[] = []
  await harness.inTransaction(async (tx) => void retried.push(await mark(harness, tx, 'email', u1), await mark(harness, tx, 'email', u2)))
  assert.deepEqual(retried, [false, false])
}

/**
 * The once-table contract (`OnceTable` in `idem/data`): a first-time mark per pair,
 * written with the caller's transaction; a concurrent mark of the pair waits for the
 * first, and two transactions crossing marks end with one committed.
 * @example
 * for (const c of onceTableContract(() => harness)) it(c.name, c.run)
 */
export function onceTableContract<Tx>(getHarness: () => OnceTableHarness<Tx>): ContractCase[] {
  return CASES.map(({ name, run, concurrent }) => ({
    name,
    run: async () => {
      const harness = getHarness()
      if (concurrent && !harness.concurrentTransactions) return
      await run(harness)
    },
  }))
}
