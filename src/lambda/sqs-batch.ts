import type { Context, SQSBatchItemFailure, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, optionNames } from '../core/errors/option-checks.js'
import type { ConsumeResult, Inbox, InboxMessage } from '../queue/inbox.js'
import { DEFAULT_MARGIN_MS, timeLeft } from './invocation.js'

/** One SQS record as the record handler gets it. */
export interface SqsMessage<Body> {
  /** The id the inbox dedupes on: the `idAttribute` attribute, else `idem-id`, else the `messageId`. */
  readonly id: string | undefined
  /** The inbox key it is recorded under. */
  readonly key: string
  /** The record's body, decoded (`decode`). */
  readonly body: Body
  /** The record as Lambda delivered it. */
  readonly record: SQSRecord
}

/** Runs once per message id, in the transaction that records the id; throw to have the record come back. */
export type SqsRecordHandler<Tx, Body> = (tx: Tx, message: SqsMessage<Body>, context: Context) => unknown

/** What `makeSqsBatchHandler` takes: the inbox, where ids come from, decoding, and time. */
export interface SqsBatchOptions<Tx, Body> {
  /**
   * The inbox the records are deduplicated through (`createInbox({ store, consumer })`):
   * each record's effects commit with its id, failures are counted, and a record that
   * failed `maxAttempts` times becomes a dead letter (and is not returned to the queue
   * again). Keep its `retentionMs` at least the queue's retention period.
   */
  inbox: Inbox<Tx, Body>
  /**
   * The message attribute whose string value is the id (a producer's own id, stable
   * across resends). A record without it cannot be deduplicated and becomes a dead
   * letter. @default the `idem-id` attribute (set by `sqsDeliverer`) when present, else the record's `messageId`
   */
  idAttribute?: string
  /** Turns the record's body into what the handler gets. A decoding error counts as a failed attempt. @default JSON.parse */
  decode?: (body: string, record: SQSRecord) => Body
  /** Records of a standard queue handled at once. A FIFO queue's are handled one at a time, in order. @default 1 */
  concurrency?: number
  /**
   * Time kept back at the end of the invocation: a record's handler is given up on at
   * `getRemainingTimeInMillis() - marginMs` (its transaction rolled back, the record
   * reported failed), and records not started by then are reported failed without running.
   * @default 1000
   */
  marginMs?: number
}

const OPTIONS = optionNames<SqsBatchOptions<unknown, unknown>>({ inbox: true, idAttribute: true, decode: true, concurrency: true, marginMs: true })

/** The attribute `sqsDeliverer` (idem/queue/sqs) puts the outbox's dedupe key in. */
const IDEM_ID_ATTRIBUTE = 'idem-id'

/**
 * Handles an SQS batch (an event source mapping with `ReportBatchItemFailures`): each
 * record goes through the inbox, so its effects commit with its message id and a record
 * delivered again (a redelivered batch, a message SQS delivers twice) is answered as a
 * duplicate without running. The answer names only the records that failed, in
 * `batchItemFailures`, so only they come back to the queue. On a FIFO queue the records
 * run one at a time, in order, and after the first failure the rest are reported failed
 * without running, so their order holds.
 *
 * A record is reported failed when its handler threw or overran (the attempt is counted;
 * after `maxAttempts` the record becomes a dead letter and is reported done), when
 * another delivery of it is running, when the store failed, and when the invocation had
 * no time left to start it.
 *
 * @throws InvalidOptionError naming the option, at creation
 * @example
 * const inbox = createInbox<PgClient, { orderId: string }>({ store: postgresStore({ pool }), consumer: 'shipments' })
 * export const handler = makeSqsBatchHandler(async (tx, message) => {
 *   await tx.query('INSERT INTO shipments (order_id) VALUES ($1)', [message.body.orderId])
 * }, { inbox })
 * @see docs/lambda.md
 */
export function makeSqsBatchHandler<Tx, Body = unknown>(
  handler: SqsRecordHandler<Tx, Body>,
  options: SqsBatchOptions<Tx, Body>,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const caller = 'makeSqsBatchHandler'
  assertKnownOptions(caller, options, OPTIONS)
  const { inbox, idAttribute, decode = decodeJson<Body>, concurrency = 1, marginMs = DEFAULT_MARGIN_MS } = options
  if (typeof handler !== 'function') throw new InvalidOptionError(`${caller}: the record handler must be a function (tx, message, context) => …`)
  if (inbox === null || typeof inbox !== 'object' || typeof inbox.consume !== 'function') {
    throw new InvalidOptionError(`${caller}: option "inbox" must come from createInbox(...)`)
  }
  if (idAttribute !== undefined) assertName(`${caller}: option "idAttribute"`, idAttribute, 256)
  if (typeof decode !== 'function') throw new InvalidOptionError(`${caller}: option "decode" must be a function (body, record) => value`)
  assertCount(`${caller}: option "concurrency"`, concurrency, 1, 10_000)
  assertDuration(`${caller}: option "marginMs"`, marginMs, 0)
  const batch: RecordSettling<Tx, Body> = { caller, handler, inbox, idAttribute, decode, marginMs }

  return async function sqsBatchHandler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
    const records = event.Records
    const failed = new Set<SQSRecord>()
    if (records.some(isFifo)) {
      for (const record of records) {
        if (failed.size > 0 || !(await settleRecord(batch, record, context))) failed.add(record)
      }
    } else {
      let next = 0
      const worker = async (): Promise<void> => {
        while (next < records.length) {
          const record = records[next++]!
          if (!(await settleRecord(batch, record, context))) failed.add(record)
        }
      }
      await Promise.all(Array.from({ length: Math.min(concurrency, records.length) }, worker))
    }
    const batchItemFailures: SQSBatchItemFailure[] = records.filter((record) => failed.has(record)).map((record) => ({ itemIdentifier: record.messageId }))
    return { batchItemFailures }
  }
}

/** What settling one record takes: the handler, the inbox, how ids and bodies are read, the margin kept before Lambda's timeout. */
interface RecordSettling<Tx, Body> {
  readonly caller: string
  readonly handler: SqsRecordHandler<Tx, Body>
  readonly inbox: SqsBatchOptions<Tx, Body>['inbox']
  readonly idAttribute: string | undefined
  readonly decode: (body: string, record: SQSRecord) => Body
  readonly marginMs: number
}

function idOf(record: SQSRecord, idAttribute: string | undefined): string | undefined {
  const attributes = record.messageAttributes ?? {}
  if (idAttribute !== undefined) return attributes[idAttribute]?.stringValue
  return attributes[IDEM_ID_ATTRIBUTE]?.stringValue ?? record.messageId
}

/** Consumes one record; true when it is done (processed, a duplicate, or a dead letter). */
async function settleRecord<Tx, Body>(batch: RecordSettling<Tx, Body>, record: SQSRecord, context: Context): Promise<boolean> {
  const { caller, handler, inbox, decode, marginMs } = batch
  let deadlineMs: number | undefined
  try {
    deadlineMs = timeLeft(context, marginMs, undefined, caller)
  } catch {
    // No time left to run it: it comes back to the queue untouched.
    return false
  }
  let body: Body
  let decodeError: unknown
  try {
    body = decode(record.body, record)
  } catch (error) {
    decodeError = error
    body = record.body as Body
  }
  const count = Number(record.attributes?.ApproximateReceiveCount)
  const message: InboxMessage<Body> = { id: idOf(record, batch.idAttribute), body, deliveryCount: Number.isInteger(count) && count > 0 ? count : undefined }
  let result: ConsumeResult
  try {
    result = await inbox.consume(
      message,
      (tx, _message, key) => {
        if (decodeError !== undefined) throw decodeError
        return handler(tx, { id: message.id, key, body, record }, context)
      },
      // A duplicate in flight elsewhere is waited for within this invocation's time only.
      deadlineMs === undefined ? undefined : { deadlineMs, waitMs: Math.min(inbox.waitMs, deadlineMs) },
    )
  } catch {
    // The store failed: nothing was committed or counted.
    return false
  }
  return result.status === 'processed' || result.status === 'duplicate' || result.status === 'dead-lettered'
}

function isFifo(record: SQSRecord): boolean {
  return record.eventSourceARN?.endsWith('.fifo') === true
}

function decodeJson<Body>(body: string): Body {
  return JSON.parse(body) as Body
}
