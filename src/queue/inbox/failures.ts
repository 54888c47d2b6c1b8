import type { MissingKeyError } from '../../core/errors/missing-key.js'
import type { InboxClaim, InboxSession, PriorFailures } from '../../ports/inbox-table.js'
import { messageKey } from '../message-key.js'
import { deadLetterPayload, errorText } from '../payload.js'
import { IN_FLIGHT_RETRY_MS, inSession, type InboxContext } from './context.js'
import type { ConsumeResult, InboxMessage } from './types.js'

// Failures counted per message, and what is given up on: kept as a dead letter with its
// last error and recorded as done, so the consumer goes on.

/** Too many failed attempts, or too many deliveries that never finished: why the message is given up on. */
export function givenUp<Tx, Body>(
  { maxAttempts, maxDeliveries }: InboxContext<Tx, Body>,
  prior: PriorFailures | undefined,
  message: InboxMessage<Body>,
): { attempts: number; error: string } | undefined {
  const failures = prior?.attempts ?? 0
  const deliveries = (message.deliveryCount ?? 1) - 1
  if (failures < maxAttempts && deliveries < maxDeliveries) return undefined
  const error =
    prior !== undefined && failures >= maxAttempts
      ? prior.lastError
      : `delivered ${deliveries} times without finishing (the consumer crashed or timed out each time); last error: ${prior?.lastError ?? 'none recorded'}`
  return { attempts: Math.max(failures, deliveries), error }
}

/** Counts a failed attempt (the handler's transaction is over): `failed`, or past `maxAttempts` a dead letter. */
export async function failed<Tx, Body, T>(context: InboxContext<Tx, Body>, key: string, message: InboxMessage<Body>, error: unknown): Promise<ConsumeResult<T>> {
  const text = errorText(error)
  const attempts = await context.table.recordFailure(context.consumer, key, text)
  if (attempts < context.maxAttempts) return { status: 'failed', key, attempts, error }
  return deadLetter(context, key, message, attempts, text)
}

/** Records the message as done and keeps it as a dead letter, in a transaction of its own. */
export async function deadLetter<Tx, Body, T>(
  context: InboxContext<Tx, Body>,
  key: string,
  message: InboxMessage<Body>,
  attempts: number,
  error: string,
): Promise<ConsumeResult<T>> {
  const session = await claim(context, key)
  // Another delivery processed it meanwhile: that outcome stands.
  if (session.state === 'processed') return { status: 'duplicate', key }
  if (session.state !== 'new') return { status: 'in-flight', key, retryAfterMs: IN_FLIGHT_RETRY_MS }
  await inSession(session, async () => {
    const prior = await session.takeFailures()
    await session.deadLetter({ payload: deadLetterPayload(message?.body), attempts, error, firstSeenAt: prior?.firstFailedAt })
    await session.commit()
  })
  return { status: 'dead-lettered', key, attempts, error }
}

/** A message without an id can never be deduplicated: it is poison, dead-lettered at once. */
export async function unkeyed<Tx, Body, T>(context: InboxContext<Tx, Body>, message: InboxMessage<Body>, error: MissingKeyError): Promise<ConsumeResult<T>> {
  // Recorded under a key derived from the content, so redeliveries of the same bytes
  // land on the same dead letter instead of piling up.
  const key = messageKey(`unkeyed:${deadLetterPayload(message?.body)}`)
  return deadLetter(context, key, message, 1, errorText(error))
}

/** Claims the message; a stale snapshot gets one fresh transaction, as in the engine. */
async function claim<Tx, Body>({ table, consumer, waitMs, retentionMs }: InboxContext<Tx, Body>, key: string): Promise<InboxSession<Tx>> {
  const request: InboxClaim = { consumer, key, waitMs, retentionMs }
  const session = await table.begin(request)
  return session.state === 'stale' ? await table.begin(request) : session
}
