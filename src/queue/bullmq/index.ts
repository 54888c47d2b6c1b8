/**
 * `idem/queue/bullmq`: a BullMQ processor that runs each job once per message id through
 * the inbox. BullMQ delivers jobs at least once (a worker that dies or stalls has its
 * job run again on another); the inbox records the job's id in the transaction of its
 * effects, so the second run finds it and completes without running.
 * - id: the job's `jobId` as the producer gave it, else `bullmq:<prefix>:<queue>:<n>@<created at>`
 *   (see `bullmqMessageId`), or the inbox's `idOf` of the job's data
 * - processed → the handler's value is the job's; duplicate → completes with no value
 * - failed → the handler's error is thrown: BullMQ's `attempts` and `backoff` retry it
 * - dead-lettered → `UnrecoverableError`: the job fails at once, into BullMQ's failed set
 * - in-flight, or the store unreachable → `moveToDelayed` + `DelayedError`: back later,
 *   no attempt counted
 * - delivery count: `attemptsStarted`; redelivery horizon: the job's attempts × backoff
 * @see docs/queue.md
 */
import { DelayedError, UnrecoverableError } from 'bullmq'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertDuration, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { ConsumeResult, Inbox, InboxMessage } from '../inbox.js'
import { errorText } from '../payload.js'
import { bullmqMessageId, retryHorizonMs, type BullmqJob } from './job.js'

export { bullmqMessageId, type BullmqJob, type BullmqJobOptions } from './job.js'

/** What `bullmqProcessor` takes: the inbox, the handler, and how long to wait out a store outage. */
export interface BullmqProcessorOptions<Tx, Data, R, J extends BullmqJob<Data> = BullmqJob<Data>> {
  /** The inbox (`createInbox`): its store, consumer name, `maxAttempts` and `idOf`. The job's data is the message body. */
  inbox: Inbox<Tx, Data>
  /** Runs in the transaction that records the job's id: write the effects through `tx`. Its value becomes the job's. */
  handler: (tx: Tx, job: J, key: string) => R | Promise<R>
  /** How long a job waits, delayed without an attempt counted, when the store cannot be reached. @default 1000 */
  storeRetryMs?: number
}

const OPTIONS = optionNames<BullmqProcessorOptions<unknown, unknown, unknown>>({ inbox: true, handler: true, storeRetryMs: true })

/**
 * A BullMQ processor (`new Worker(queue, processor, …)`) that runs `handler` once per
 * job id: in one transaction it records the id, runs the handler and commits. A job run
 * again (its worker died or stalled, its completion was lost, the producer added it
 * again) completes without running the handler.
 * @throws InvalidOptionError naming the option
 * @example
 * // inbox: createInbox({ store: postgresStore({ pool }), consumer: 'claims-intake' })
 * const worker = new Worker('claims', bullmqProcessor({
 *   inbox,
 *   handler: (tx, job) => tx.query('INSERT INTO claims (id, body) VALUES ($1, $2)', [job.data.claimId, job.data]),
 * }), { connection })
 * @see docs/queue.md
 */
export function bullmqProcessor<Tx, Data, R, J extends BullmqJob<Data> = BullmqJob<Data>>(
  options: BullmqProcessorOptions<Tx, Data, R, J>,
): (job: J, token?: string) => Promise<R | undefined> {
  assertKnownOptions('bullmqProcessor', options, OPTIONS)
  const { inbox, handler, storeRetryMs = 1_000 } = options
  if (inbox === null || typeof inbox !== 'object' || typeof inbox.consume !== 'function') {
    throw new InvalidOptionError('bullmqProcessor: option "inbox" must come from createInbox(...)')
  }
  if (typeof handler !== 'function') throw new InvalidOptionError('bullmqProcessor: option "handler" must be a function (tx, job, key) => …')
  assertDuration('bullmqProcessor: option "storeRetryMs"', storeRetryMs, 0)

  return async function bullmqInboxProcessor(job, token) {
    const horizon = retryHorizonMs(job.opts)
    // The inbox decides whether to warn; the comparison here only spares most jobs the source's text.
    if (horizon !== undefined && horizon > inbox.retentionMs) inbox.expectRedeliveryWithin(horizon, `BullMQ (${job.queueQualifiedName}: attempts × backoff)`)
    const started = job.attemptsStarted
    const message: InboxMessage<Data> = {
      id: bullmqMessageId(job),
      body: job.data,
      deliveryCount: Number.isInteger(started) && started > 0 ? started : undefined,
      redelivered: Number.isInteger(started) ? started > 1 : undefined,
    }
    let result: ConsumeResult<R>
    try {
      result = await inbox.consume(message, (tx, _message, key) => handler(tx, job, key))
    } catch {
      // The store failed: nothing was committed or counted (the inbox reported it).
      return later(job, token, storeRetryMs, 'the store could not be reached')
    }
    return settle(job, token, inbox.consumer, result)
  }
}

/** What BullMQ is told of a settled job: its value, an error that retries or fails it, or a move to later. */
async function settle<R>(job: BullmqJob, token: string | undefined, consumer: string, result: ConsumeResult<R>): Promise<R | undefined> {
  switch (result.status) {
    case 'processed':
      return result.value
    case 'duplicate':
      return undefined
    case 'failed':
      // The handler's own error, so BullMQ's failedReason and stack are the handler's.
      throw result.error instanceof Error ? result.error : new Error(errorText(result.error))
    case 'dead-lettered':
      throw new UnrecoverableError(`idem inbox "${consumer}": dead-lettered after ${result.attempts} attempts: ${result.error}`)
    case 'in-flight':
      return later(job, token, result.retryAfterMs, 'another delivery of it is being processed')
  }
}

/** Back in the queue after `delayMs`, as BullMQ's own delayed jobs: no attempt is counted. */
async function later(job: BullmqJob, token: string | undefined, delayMs: number, why: string): Promise<never> {
  await job.moveToDelayed(Date.now() + delayMs, token)
  throw new DelayedError(`idem: ${why}; the job is delayed ${delayMs} ms`)
}
