import { randomUUID } from 'node:crypto'
import type { ClaimedRow } from '../../ports/outbox-table.js'
import { Attempt } from './attempt.js'
import { ClaimHold } from './claim-hold.js'
import type { DispatchContext } from './context.js'
import { Outcomes } from './outcomes.js'
import type { OverdueDeliveries } from './overdue.js'
import type { DispatchResult, OutboxRow } from './types.js'

/**
 * One round, `Dispatcher.runOnce`: claims a batch of due rows (leasing them), delivers
 * them at once, waits until all have settled or the deadline passed, fires the late
 * ones' signals, and writes the outcomes under the claim; deliveries still running are
 * left to `overdue`, which records each when it settles.
 */
export async function runRound(context: DispatchContext, overdue: OverdueDeliveries): Promise<DispatchResult> {
  const { table, leaseMs, maxAttempts } = context
  const claimId = randomUUID()
  // Taken before the claim is sent: the database starts the lease later, so it lasts at least until this plus leaseMs.
  const sentAt = performance.now()
  const rows = await table.claim(claimId, context.batchSize, leaseMs, context.topics)
  const result: DispatchResult = { claimed: rows.length, delivered: 0, retried: 0, deadLettered: 0, overdue: 0 }
  if (rows.length === 0) return reported(context, result, sentAt, rows)
  // The deliverers' time counts from when they get the rows (a claim may have waited
  // for a connection); if that makes the deadline late, the hold's expiry fires first.
  const deadline = performance.now() + context.deadlineMs
  const outcomes = new Outcomes(context)
  const hold = new ClaimHold(table, claimId, leaseMs, context.renewEveryMs, sentAt, context.report)
  const attempts: Attempt[] = []
  for (const claimed of rows) {
    const row = outboxRow(claimed)
    if (row.attempt > maxAttempts) {
      // Claimed maxAttempts times without an outcome: each dispatcher that claimed it died (or lost the database) mid-delivery.
      outcomes.kill(row, `no outcome after ${maxAttempts} claims (each dispatcher that claimed it stopped before recording one); last error: ${row.lastError ?? 'none'}`)
      continue
    }
    attempts.push(new Attempt(row, hold, context.deliver))
  }
  await settledOrDeadline(attempts, deadline)
  const late = attempts.filter((attempt) => attempt.outcome === undefined)
  if (late.length > 0) {
    for (const { controller } of late) controller.abort(new DOMException(context.deadlineMessage, 'TimeoutError'))
    // A deliverer that gives up as soon as its signal fires settles within this turn:
    // its outcome is written with the round's instead of later on its own.
    await new Promise((resolve) => setImmediate(resolve))
  }
  for (const attempt of attempts) {
    if (attempt.outcome !== undefined) outcomes.add(attempt.row, attempt.outcome)
    else {
      result.overdue++
      overdue.recordLater(claimId, attempt)
    }
  }
  await outcomes.write(claimId)
  result.delivered = outcomes.delivered.length
  result.retried = outcomes.retry.length
  result.deadLettered = outcomes.dead.length
  return reported(context, result, sentAt, rows)
}

/** Reports the round to the event stream, if anyone listens; returns `result`. */
function reported({ events }: DispatchContext, result: DispatchResult, started: number, rows: readonly ClaimedRow[]): DispatchResult {
  if (events.listening) {
    const oldest = rows.reduce<number | undefined>((at, row) => Math.min(at ?? Infinity, row.createdAt.getTime()), undefined)
    events.emit({ type: 'dispatch', ...result, lagMs: oldest === undefined ? undefined : Date.now() - oldest, durationMs: performance.now() - started })
  }
  return result
}

async function settledOrDeadline(attempts: Attempt[], deadline: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      Promise.all(attempts.map((attempt) => attempt.settled)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, deadline - performance.now()))
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

function outboxRow(claimed: ClaimedRow): OutboxRow {
  return {
    id: claimed.id,
    topic: claimed.topic,
    payload: claimed.payload,
    dedupeKey: claimed.dedupeKey,
    attempt: claimed.attempts,
    lastError: claimed.lastError,
    createdAt: claimed.createdAt,
  }
}
