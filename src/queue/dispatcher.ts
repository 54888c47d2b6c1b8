import { DispatchLoop } from './dispatcher/loop.js'
import { dispatchContext } from './dispatcher/options.js'
import { OverdueDeliveries } from './dispatcher/overdue.js'
import { Rounds } from './dispatcher/rounds.js'
import type { Dispatcher, DispatcherOptions } from './dispatcher/types.js'

export type { Deliverer, DeliveryContext, Dispatcher, DispatcherOptions, DispatchResult, OutboxRow } from './dispatcher/types.js'

/**
 * Creates an outbox dispatcher: it claims due rows (Postgres: `FOR UPDATE SKIP LOCKED`
 * in one short statement, leasing them), hands each to `deliver` with its dedupe key
 * and an abort signal, marks it delivered, retries failures with exponential backoff
 * and full jitter, and after `maxAttempts` moves the row to `idem_dead_letters` with its
 * last error. Several dispatchers, in one process or many, share the work and never
 * send one row twice at once: a row is offered again only after its attempt has settled
 * (the outcome is recorded under the claim that made it) or, if its dispatcher died,
 * after the lease it last renewed has run out. A repeat after a crash carries the same
 * dedupe key.
 *
 * Each attempt's signal fires at its deadline, a little before the lease would end. A
 * delivery still running then is not given up on (giving up on waiting does not stop
 * it sending): the dispatcher keeps renewing the row's lease until it settles and then
 * records its outcome, while `runOnce` returns and later rounds go on with other rows.
 *
 * @throws InvalidOptionError naming the option, at creation
 * @example
 * const dispatcher = createDispatcher({
 *   store: postgresStore({ pool }),
 *   deliver: (row, { signal }) => mail.send(row.payload, { idempotencyKey: row.dedupeKey, signal }),
 *   maxAttempts: 8,
 *   backoff: { baseMs: 500, maxMs: 60_000 },
 * })
 * dispatcher.start()
 * @see docs/queue.md
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  // The parts, each in dispatcher/: the options checked once (options.ts); a round
  // (round.ts) of deliveries (attempt.ts) under one claim, leased while they run
  // (claim-hold.ts), their outcomes with the backoff (outcomes.ts), and those recorded
  // after the round (overdue.ts); the rounds under way (rounds.ts) and start/stop (loop.ts).
  const context = dispatchContext(options)
  const overdue = new OverdueDeliveries(context)
  const rounds = new Rounds(context, overdue)
  const loop = new DispatchLoop(context, rounds, overdue)
  return {
    runOnce: () => rounds.runOnce(),
    drain: () => rounds.drain(),
    pending: () => context.table.pending(),
    start: () => loop.start(),
    stop: () => loop.stop(),
  }
}
