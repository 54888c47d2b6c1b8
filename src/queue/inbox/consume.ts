import { isThenable, withinDeadline } from '../../core/hold-clock.js'
import { InvalidKeyError } from '../../core/errors/invalid-key.js'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { MissingKeyError } from '../../core/errors/missing-key.js'
import { OverranError } from '../../core/errors/overran.js'
import { warn } from '../../core/events.js'
import type { InboxClaim, InboxSession } from '../../ports/inbox-table.js'
import { messageKey, refusedMessageKey } from '../message-key.js'
import { deadLetterPayload, errorText } from '../payload.js'
import { CALLER, IN_FLIGHT_RETRY_MS, inSession, type InboxContext } from './context.js'
import { deadLetter, failed, givenUp, unkeyed } from './failures.js'
import { idOfMessage } from './message-id.js'
import { assertConsumeOptions } from './options.js'
import { report, reportError } from './report.js'
import type { ConsumeOptions, ConsumeResult, InboxHandler, InboxMessage } from './types.js'

/**
 * One delivery, `Inbox.consume`: keys the message, claims it (one transaction), runs the
 * handler in that transaction and commits. `failures.ts` says when a redelivery is given
 * up on, and counts a failed attempt (dead-lettering it past `maxAttempts`).
 */
export async function consume<Tx, Body, T>(
  context: InboxContext<Tx, Body>,
  message: InboxMessage<Body>,
  handler: InboxHandler<Tx, Body, T>,
  options: ConsumeOptions | undefined,
): Promise<ConsumeResult<T>> {
  if (typeof handler !== 'function') throw new InvalidOptionError('consume: "handler" must be a function (tx, message) => …')
  if (options !== undefined) assertConsumeOptions(options)
  const heldFor = options?.deadlineMs ?? context.deadlineMs
  const started = performance.now()
  const keyed = keyOrRefusal<Tx, Body, T>(context, message)
  if (typeof keyed !== 'string') return report(context, await keyed(), started)
  const key = keyed
  let session: InboxSession<Tx>
  try {
    // As `failures.ts`'s `claim`, spelled out: one async layer less on every message.
    const request: InboxClaim = { consumer: context.consumer, key, waitMs: options?.waitMs ?? context.waitMs, retentionMs: context.retentionMs }
    session = await context.table.begin(request)
    if (session.state === 'stale') session = await context.table.begin(request)
  } catch (error) {
    reportError(context, started, error)
    throw error
  }
  if (session.state === 'processed') return report(context, { status: 'duplicate', key }, started)
  if (session.state !== 'new') return report(context, { status: 'in-flight', key, retryAfterMs: IN_FLIGHT_RETRY_MS }, started)

  // A first delivery cannot have failed before: skip the failure lookup (the hot path).
  const first = message.deliveryCount === 1 || (message.deliveryCount === undefined && message.redelivered === false)
  if (!first) {
    const prior = await inSession(session, () => session.takeFailures())
    const given = givenUp(context, prior, message)
    if (given !== undefined) {
      await inSession(session, async () => {
        await session.deadLetter({ payload: deadLetterPayload(message?.body), attempts: given.attempts, error: given.error, firstSeenAt: prior?.firstFailedAt })
        await session.commit()
      })
      return report(context, { status: 'dead-lettered', key, ...given }, started)
    }
  }
  return runHandler(context, session, message, key, handler, heldFor, started)
}

/**
 * The message's key, or, for a message that cannot be keyed, its refusal to run: one
 * without an id can never be deduplicated (poison); one whose id is refused is
 * dead-lettered under a key of its own, never folded into another id's key.
 */
function keyOrRefusal<Tx, Body, T>(context: InboxContext<Tx, Body>, message: InboxMessage<Body>): string | (() => Promise<ConsumeResult<T>>) {
  let id: string
  try {
    id = idOfMessage(context, message)
  } catch (error) {
    if (!(error instanceof MissingKeyError)) throw error
    return () => unkeyed<Tx, Body, T>(context, message, error)
  }
  try {
    return messageKey(id)
  } catch (error) {
    if (!(error instanceof InvalidKeyError)) throw error
    return () => deadLetter<Tx, Body, T>(context, refusedMessageKey(id), message, 1, errorText(error))
  }
}

/** Runs the handler in the claimed session within `heldFor`, and commits its work, or rolls back and counts the failure. */
async function runHandler<Tx, Body, T>(
  context: InboxContext<Tx, Body>,
  session: InboxSession<Tx>,
  message: InboxMessage<Body>,
  key: string,
  handler: InboxHandler<Tx, Body, T>,
  heldFor: number,
  started: number,
): Promise<ConsumeResult<T>> {
  let value: T
  let overran: OverranError | undefined
  try {
    const running = handler(session.tx, message, key)
    value = isThenable(running)
      ? await withinDeadline(running, heldFor, () => {
          const abandon = overrun(context, session, key, heldFor)
          return abandon && abandon.then((error) => (overran = error))
        })
      : await running
  } catch (error) {
    if (overran !== undefined && error === overran) return report(context, await failed<Tx, Body, T>(context, key, message, overran), started, overran)
    await session.rollback()
    // The handler failed because the store's connection died: nothing was committed,
    // and it is the store's failure, not the message's.
    const lost = session.lost?.()
    if (lost !== undefined) throw lost
    return report(context, await failed<Tx, Body, T>(context, key, message, error), started, error)
  }
  await session.commit()
  return report(context, { status: 'processed', key, value }, started)
}

/**
 * The deadline passed with the handler still running: the session is abandoned and the
 * attempt fails, or, where the store cannot end it under the handler (SQLite), it stays
 * until the handler ends. Either way the log says which message overran.
 */
function overrun<Tx, Body>({ consumer, events }: InboxContext<Tx, Body>, session: InboxSession<Tx>, key: string, heldFor: number): Promise<OverranError> | undefined {
  const held = `idem inbox "${consumer}": the handler of message ${JSON.stringify(key)} still runs ${heldFor} ms after it took the message (deadlineMs)`
  if (session.abandon === undefined) {
    warn(events, { code: 'overran-held', source: CALLER, message: `${held}; the store cannot end its transaction while it runs, so the message stays held until it ends` })
    return undefined
  }
  return session.abandon().then(() => {
    const error = new OverranError(`${held}: its transaction was rolled back; the attempt counts as failed`)
    warn(events, { code: 'handler-overran', source: CALLER, message: error.message })
    return error
  })
}
