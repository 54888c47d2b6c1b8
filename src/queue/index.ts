/**
 * `idem/queue`: at-least-once delivery made effectively-once. The inbox runs a
 * consumer's handler once per message id, in the transaction that records the id; the
 * outbox queues effects in the caller's transaction and a dispatcher delivers them with
 * a stable dedupe key; failures are retried with backoff and, after N attempts, kept
 * as dead letters. Broker adapters live in `idem/queue/rabbitmq`, `idem/queue/redis-streams`,
 * `idem/queue/nats`, `idem/queue/sqs` and `idem/queue/kafka`; a BullMQ worker's processor in
 * `idem/queue/bullmq`. The webhook receiver is HTTP's (`idem/fetch`).
 * @see docs/queue.md
 */
export {
  createInbox,
  DEFAULT_INBOX_RETENTION_MS,
  DEFAULT_MAX_ATTEMPTS,
  type ConsumeOptions,
  type ConsumeResult,
  type Inbox,
  type InboxHandler,
  type InboxMessage,
  type InboxOptions,
  type InboxWarning,
} from './inbox.js'
export { createOutbox, type Outbox, type OutboxEntry, type OutboxOptions } from './outbox.js'
export { createDispatcher, type Deliverer, type DeliveryContext, type Dispatcher, type DispatcherOptions, type DispatchResult, type OutboxRow } from './dispatcher.js'
export { backoffDelay, DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_MAX_MS, type Backoff, type BackoffContext, type BackoffOptions } from '../core/backoff.js'
export { startConsumer, handleDelivery, type Consumer, type ConsumerOptions, type ConsumedMessage } from './consumer.js'
export type { Delivery, MessageSource, Subscription } from './source.js'
export { listDeadLetters, type DeadLetterRow, type ListDeadLettersOptions } from './dead-letters.js'
export { messageKey } from './message-key.js'
export { idFromBytes, BYTE_ID_PREFIX } from './byte-id.js'
export type { InboxTable, InboxSession, InboxClaim, InboxDeadLetter, PriorFailures, WithInboxTable } from '../ports/inbox-table.js'
export type { OutboxTable, OutboxInsert, ClaimedRow, WithOutboxTable } from '../ports/outbox-table.js'
export type { DeadLetterTable, WithDeadLetterTable } from '../ports/dead-letter-table.js'
