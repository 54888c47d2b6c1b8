import { reportDeadLetter } from '../events.js'
import { errorText } from '../payload.js'
import type { Outcome } from './attempt.js'
import type { DispatchContext } from './context.js'
import type { OutboxRow } from './types.js'

/**
 * What became of a claim's settled deliveries, written under the claim together: the
 * rows delivered, those to retry after their backoff, and those given up on (dead
 * letters, past `maxAttempts`).
 */
export class Outcomes {
  readonly delivered: string[] = []
  readonly retry: { id: string; delayMs: number; error: string }[] = []
  readonly dead: { id: string; error: string }[] = []
  /** The dead rows themselves, for the event stream. */
  readonly deadRows: { row: OutboxRow; error: string }[] = []
  readonly #context: DispatchContext

  constructor(context: DispatchContext) {
    this.#context = context
  }

  /** Files a settled delivery: delivered, a retry after its backoff, or (its last attempt failed) dead. */
  add(row: OutboxRow, outcome: Outcome): void {
    if (!outcome.failed) {
      this.delivered.push(row.id)
      return
    }
    const text = errorText(outcome.error)
    const { maxAttempts, delayOf } = this.#context
    if (row.attempt >= maxAttempts) this.kill(row, text)
    else this.retry.push({ id: row.id, delayMs: delayOf(row.attempt), error: text })
  }

  /** Gives the row up: it moves to the dead letters with `error`. */
  kill(row: OutboxRow, error: string): void {
    this.dead.push({ id: row.id, error })
    this.deadRows.push({ row, error })
  }

  /** Writes the outcomes under `claimId` (a row another claim took meanwhile is left alone) and reports the dead letters. */
  async write(claimId: string): Promise<void> {
    const { table, events } = this.#context
    if (this.delivered.length > 0) await table.delivered(claimId, this.delivered)
    if (this.retry.length > 0) await table.retry(claimId, this.retry)
    if (this.dead.length > 0) {
      await table.deadLetter(claimId, this.dead)
      for (const { row, error } of this.deadRows) {
        reportDeadLetter(events, { type: 'dead-letter', source: 'outbox', name: row.topic, key: row.dedupeKey, attempts: row.attempt, error })
      }
    }
  }
}
