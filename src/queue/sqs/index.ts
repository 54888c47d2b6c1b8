/**
 * `idem/queue/sqs`: Amazon SQS through `@aws-sdk/client-sqs` v3.
 * - id: the `idem-id` message attribute when present (the outbox deliverer sets it to the dedupe key), else `MessageId`
 * - ack → `DeleteMessage`; nack(delay) → `ChangeMessageVisibility` to the delay (whole seconds, at most 12 h);
 *   dead letter → `SendMessage` to `deadLetterQueueUrl` (if set) and `DeleteMessage`. A queue redrive policy
 *   (`maxReceiveCount`) also moves messages that crash the consumer every time.
 * - delivery count: `ApproximateReceiveCount`; redelivery horizon: the queue's `MessageRetentionPeriod`
 * @see docs/queue.md
 */
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs'
import { createHash } from 'node:crypto'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertKnownOptions, assertName, optionNames } from '../../core/errors/option-checks.js'
import type { DeliveryContext, OutboxRow } from '../dispatcher.js'
import { Limiter } from '../limiter.js'
import type { Delivery, MessageSource, Subscription } from '../source.js'

/** An `SQSClient`, typed by its one method. */
export interface SqsSender {
  /** Sends one SQS command (the SDK v3 `client.send`); `abortSignal` cancels it. */
  send(command: any, options?: { abortSignal?: AbortSignal }): Promise<any>
}

/** The message attribute carrying idem's message id. */
export const SQS_ID_ATTRIBUTE = 'idem-id'

/** What `sqsSource` takes: the client, the queue URL, batch size, long polling and the dead-letter queue. */
export interface SqsSourceOptions {
  client: SqsSender
  queueUrl: string
  /** Messages per receive (1–10), handled concurrently. @default 10 */
  maxMessages?: number
  /** Long-poll wait per receive, in seconds (0–20). @default 20 */
  waitTimeSeconds?: number
  /** Where dead letters are copied before deletion. @default none (only deleted; idem's table keeps them) */
  deadLetterQueueUrl?: string
}

const SOURCE_OPTIONS = optionNames<SqsSourceOptions>({ client: true, queueUrl: true, maxMessages: true, waitTimeSeconds: true, deadLetterQueueUrl: true })

/**
 * Reads an SQS queue with long polling.
 * @example
 * const source = sqsSource({ client: new SQSClient({}), queueUrl })
 * await startConsumer({ inbox, source, handler })
 */
export function sqsSource(options: SqsSourceOptions): MessageSource {
  assertKnownOptions('sqsSource', options, SOURCE_OPTIONS)
  const { client, queueUrl, maxMessages = 10, waitTimeSeconds = 20, deadLetterQueueUrl } = options
  if (client === null || typeof client !== 'object' || typeof client.send !== 'function') {
    throw new InvalidOptionError('sqsSource: option "client" must be an SQSClient')
  }
  assertName('sqsSource: option "queueUrl"', queueUrl, 2_000)
  assertCount('sqsSource: option "maxMessages"', maxMessages, 1, 10)
  assertCount('sqsSource: option "waitTimeSeconds"', waitTimeSeconds, 0, 20)
  return {
    name: `sqs:${queueUrl}`,
    async redeliveryHorizonMs() {
      const { Attributes } = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['MessageRetentionPeriod'] }))
      const seconds = Number(Attributes?.MessageRetentionPeriod)
      return Number.isFinite(seconds) ? seconds * 1000 : undefined
    },
    async subscribe(onDelivery): Promise<Subscription> {
      const running = new Limiter(maxMessages)
      const abort = new AbortController()
      let stopped = false
      const loop = (async () => {
        while (!stopped) {
          let messages: Message[]
          try {
            const reply = await client.send(
              new ReceiveMessageCommand({
                QueueUrl: queueUrl,
                MaxNumberOfMessages: maxMessages,
                WaitTimeSeconds: waitTimeSeconds,
                MessageSystemAttributeNames: ['ApproximateReceiveCount'],
                MessageAttributeNames: ['All'],
              }),
              { abortSignal: abort.signal },
            )
            messages = reply.Messages ?? []
          } catch {
            if (stopped) break
            await new Promise((resolve) => setTimeout(resolve, 200))
            continue
          }
          for (const message of messages) await running.run(() => onDelivery(toDelivery(client, queueUrl, message, deadLetterQueueUrl)))
        }
      })()
      return {
        async close() {
          stopped = true
          abort.abort()
          await loop
          await running.idle()
        },
      }
    },
  }
}

function toDelivery(client: SqsSender, queueUrl: string, message: Message, deadLetterQueueUrl: string | undefined): Delivery {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    if (value.StringValue !== undefined) headers[name] = value.StringValue
  }
  const count = Number(message.Attributes?.ApproximateReceiveCount)
  const receipt = message.ReceiptHandle
  return {
    id: headers[SQS_ID_ATTRIBUTE] ?? message.MessageId,
    data: Buffer.from(message.Body ?? '', 'utf8'),
    headers,
    deliveryCount: Number.isInteger(count) && count > 0 ? count : undefined,
    redelivered: Number.isInteger(count) ? count > 1 : undefined,
    async ack() {
      await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: receipt }))
    },
    async nack(delayMs) {
      const seconds = Math.min(Math.ceil(delayMs / 1000), 43_200)
      await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: receipt, VisibilityTimeout: seconds }))
    },
    async deadLetter(reason) {
      if (deadLetterQueueUrl !== undefined) {
        await client.send(
          new SendMessageCommand({
            QueueUrl: deadLetterQueueUrl,
            MessageBody: message.Body ?? '',
            MessageAttributes: {
              ...(message.MessageAttributes ?? {}),
              'idem-error': { DataType: 'String', StringValue: reason.slice(0, 1_000) || 'unknown' },
            },
          }),
        )
      }
      await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: receipt }))
    },
  }
}

/** What `sqsDeliverer` takes: the client and the queue of each row. */
export interface SqsDelivererOptions {
  client: SqsSender
  /** The queue for a row. */
  queueUrl: string | ((row: OutboxRow) => string)
}

const DELIVERER_OPTIONS = optionNames<SqsDelivererOptions>({ client: true, queueUrl: true })

/**
 * An outbox deliverer that sends each row as JSON with the dedupe key in the `idem-id`
 * attribute; on a FIFO queue it is also the `MessageDeduplicationId` (hashed to fit),
 * so SQS drops a repeat within its 5-minute window and the consumer's inbox after it.
 * The dispatcher's signal is the request's `abortSignal`: at the deadline the SDK
 * destroys the request and makes no further retry of it, so nothing of this attempt is
 * sent after it settles; if SQS had already taken the message, the retry carries the
 * same dedupe key.
 * @example createDispatcher({ store: postgresStore({ pool }), deliver: sqsDeliverer({ client, queueUrl }) }).start()
 */
export function sqsDeliverer(options: SqsDelivererOptions): (row: OutboxRow, context?: DeliveryContext) => Promise<void> {
  assertKnownOptions('sqsDeliverer', options, DELIVERER_OPTIONS)
  const { client, queueUrl } = options
  if (client === null || typeof client !== 'object' || typeof client.send !== 'function') {
    throw new InvalidOptionError('sqsDeliverer: option "client" must be an SQSClient')
  }
  return async (row, context) => {
    context?.signal.throwIfAborted()
    const url = typeof queueUrl === 'function' ? queueUrl(row) : queueUrl
    const fifo = url.endsWith('.fifo')
    const attributes: Record<string, MessageAttributeValue> = { [SQS_ID_ATTRIBUTE]: { DataType: 'String', StringValue: row.dedupeKey } }
    await client.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: JSON.stringify(row.payload),
        MessageAttributes: attributes,
        ...(fifo ? { MessageGroupId: row.topic, MessageDeduplicationId: createHash('sha256').update(row.dedupeKey).digest('hex') } : {}),
      }),
      context === undefined ? undefined : { abortSignal: context.signal },
    )
  }
}
