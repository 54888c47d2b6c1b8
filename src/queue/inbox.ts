import { messageKey } from './message-key.js'
import { consume } from './inbox/consume.js'
import { idOfMessage } from './inbox/message-id.js'
import { inboxContext } from './inbox/options.js'
import { RetentionCheck } from './inbox/retention-check.js'
import type { Inbox, InboxOptions } from './inbox/types.js'

export {
  DEFAULT_INBOX_RETENTION_MS,
  DEFAULT_MAX_ATTEMPTS,
  type ConsumeOptions,
  type ConsumeResult,
  type Inbox,
  type InboxHandler,
  type InboxMessage,
  type InboxOptions,
  type InboxWarning,
} from './inbox/types.js'

/**
 * Creates an idempotent consumer (the inbox pattern): each message's effects commit in
 * the same transaction as its id, so a redelivery after a crash, a lost ack or a
 * rebalance finds the id and is acknowledged without running again. Failures are
 * counted per message; after `maxAttempts` the message goes to the dead letters with
 * its last error, and the consumer goes on.
 *
 * @throws InvalidOptionError naming the option, at creation (also for a store without an inbox table)
 * @example
 * const inbox = createInbox({ store: postgresStore({ pool }), consumer: 'claims-intake' })
 * const result = await inbox.consume({ id: msg.properties.messageId, body }, async (tx) => {
 *   await tx.query('INSERT INTO claims (id, body) VALUES ($1, $2)', [body.claimId, body])
 * })
 * if (result.status === 'failed' || result.status === 'in-flight') channel.nack(msg)
 * else channel.ack(msg)
 * @see docs/queue.md
 */
export function createInbox<Tx, Body = unknown>(options: InboxOptions<Tx, Body>): Inbox<Tx, Body> {
  // The parts, each in inbox/: the options checked once (options.ts), the delivery's
  // path (consume.ts) with its failures and dead letters (failures.ts), and the
  // retention's check against the broker's redelivery (retention-check.ts).
  const context = inboxContext(options)
  const retention = new RetentionCheck(context)
  if (context.redeliveryHorizonMs !== undefined) retention.expectRedeliveryWithin(context.redeliveryHorizonMs)
  const { consumer, retentionMs, maxAttempts, waitMs } = context
  return {
    consumer,
    retentionMs,
    maxAttempts,
    waitMs,
    consume: (message, handler, options) => consume(context, message, handler, options),
    keyOf: (message) => messageKey(idOfMessage(context, message)),
    expectRedeliveryWithin: (horizonMs, source) => retention.expectRedeliveryWithin(horizonMs, source),
  }
}
