// What the BullMQ processor reads of a job: its shape, its message id, and how long
// BullMQ itself may go on delivering it. BullMQ's `Job` fits the shape.
import { MAX_DURATION_MS } from '../../core/errors/option-checks.js'

/** A job's retry settings, as BullMQ's `JobsOptions` has them. */
export interface BullmqJobOptions {
  /** Tries in all, the first included (BullMQ's default: 1, no retry). */
  readonly attempts?: number | undefined
  /** The wait before each retry: a fixed delay in ms, or a strategy with its delay. */
  readonly backoff?: number | { readonly type: string; readonly delay?: number | undefined } | undefined
}

/** The parts of a BullMQ `Job` the processor uses. */
export interface BullmqJob<Data = unknown> {
  /** The job's id: BullMQ's counter (`"17"`) or the producer's `jobId`. */
  readonly id?: string | undefined
  /** The queue with its key prefix, `bull:claims`. */
  readonly queueQualifiedName: string
  /** The payload: the inbox's message body. */
  readonly data: Data
  /** When the job was created (ms since the epoch). */
  readonly timestamp: number
  /** How often a worker has taken the job, this time included: the delivery count. */
  readonly attemptsStarted: number
  readonly opts: BullmqJobOptions
  /** Moves the job to the delayed set until `timestamp`, without counting an attempt. */
  moveToDelayed(timestamp: number, token?: string): Promise<void>
}

/**
 * The inbox's message id of a job. A producer's `jobId` is used as it is: it names the
 * intent, so a job added again under it (after BullMQ removed the first) is the same
 * message. An id BullMQ made (its per-queue counter, `"17"`: custom ids cannot be
 * integers) is only unique while the queue's counter lives; an obliterated queue, or a
 * Redis that lost its data, counts from 1 again. So it is named with its queue and the
 * job's creation time, `bullmq:bull:claims:17@1733000000000`: the same on every delivery
 * of the job, and never the id of the job that had the number before. (Custom ids
 * cannot have more than two colons, so the two forms never meet.)
 * @example bullmqMessageId(job) // → 'order-1001', or 'bullmq:bull:claims:17@1733000000000'
 */
export function bullmqMessageId(job: Pick<BullmqJob, 'id' | 'queueQualifiedName' | 'timestamp'>): string | undefined {
  const { id } = job
  if (id === undefined || String(Number.parseInt(id, 10)) !== id) return id
  return `bullmq:${job.queueQualifiedName}:${id}@${job.timestamp}`
}

/**
 * How long after its first delivery BullMQ may still deliver a job by itself: the sum
 * of the backoffs before each of its retries (`fixed`: delay × (attempts − 1);
 * `exponential`: delay × (2^(attempts − 1) − 1), jitter only shortens them), at most
 * `MAX_DURATION_MS`. Undefined for a custom strategy, which only the worker knows.
 */
export function retryHorizonMs({ attempts = 1, backoff }: BullmqJobOptions): number | undefined {
  if (!Number.isInteger(attempts) || attempts <= 1 || backoff === undefined) return 0
  const { type, delay = 0 } = typeof backoff === 'number' ? { type: 'fixed', delay: backoff } : backoff
  if (typeof delay !== 'number' || !(delay >= 0)) return undefined
  const total = type === 'fixed' ? delay * (attempts - 1) : type === 'exponential' ? delay * (2 ** (attempts - 1) - 1) : undefined
  return total === undefined ? undefined : Math.min(Math.round(total), MAX_DURATION_MS)
}
