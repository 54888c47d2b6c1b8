/**
 * What the inbox's users see: the message, what became of it, the options and the
 * `Inbox` itself, with the defaults the options name. `../inbox.ts` exports them with
 * `createInbox`; the inbox's parts in this folder import them from here.
 */
import type { EventStream } from '../../core/events.js'
import type { WithInboxTable } from '../../ports/inbox-table.js'

/** 14 days: SQS's longest retention, so no broker redelivers a message after its id is forgotten. */
export const DEFAULT_INBOX_RETENTION_MS = 14 * 24 * 60 * 60 * 1000
/** Failed attempts (the handler threw) before a message becomes a dead letter. */
export const DEFAULT_MAX_ATTEMPTS = 5

/** A message as the inbox sees it: broker-neutral. */
export interface InboxMessage<Body = unknown> {
  /** The broker's id for the message, the same on every redelivery (absent if the broker has none). */
  id?: string | undefined
  /** The decoded content. */
  body: Body
  /** Deliveries so far, this one included (1 = first), when the broker counts them. */
  deliveryCount?: number | undefined
  /** The broker's "delivered before" flag, for brokers without a count. */
  redelivered?: boolean | undefined
}

/** What became of one delivery, and so what the caller does with it. */
export type ConsumeResult<T = unknown> =
  /** The handler ran and its effects committed with the message id: ack. `value` is what it returned (not stored). */
  | { readonly status: 'processed'; readonly key: string; readonly value: T }
  /** The id was already recorded (processed or dead-lettered before): ack without running anything. */
  | { readonly status: 'duplicate'; readonly key: string }
  /** Too many failed attempts: the message is in the dead letters with its last error, and recorded as done: ack. */
  | { readonly status: 'dead-lettered'; readonly key: string; readonly attempts: number; readonly error: string }
  /**
   * The handler threw (or still ran at `deadlineMs`: `error` is an `OverranError`); its
   * effects were rolled back and the attempt counted: redeliver after `attempts`' backoff.
   */
  | { readonly status: 'failed'; readonly key: string; readonly attempts: number; readonly error: unknown }
  /** Another delivery of the same message is being processed right now: redeliver later; nothing was counted. */
  | { readonly status: 'in-flight'; readonly key: string; readonly retryAfterMs: number }

/** What one `consume` call may set for itself, over the inbox's own settings. */
export interface ConsumeOptions {
  /**
   * How long this delivery's handler may hold its message, instead of the inbox's
   * `deadlineMs`: for a consumer whose time is bounded from outside (a Lambda
   * invocation's remaining time, a visibility timeout measured as the message arrived).
   */
  deadlineMs?: number
  /** How long this delivery waits for another delivery of the message that is being processed, instead of the inbox's `waitMs`. */
  waitMs?: number
}

/** Runs in the transaction that records the message; `key` is what it is recorded under (see `keyOf`). */
export type InboxHandler<Tx, Body, T> = (tx: Tx, message: InboxMessage<Body>, key: string) => T | Promise<T>

/** Something worth an operator's attention that is not an error. */
export interface InboxWarning {
  code: 'retention-shorter-than-redelivery-horizon'
  message: string
}

/** What `createInbox` takes: the store, the consumer name, retention, attempt limits, the message id and where to report. */
export interface InboxOptions<Tx, Body = unknown> {
  /**
   * Where message ids, failure counts and dead letters live: a store with an inbox
   * table (`postgresStore`, `sqliteStore`, `memoryStore`). Its ids commit in the same
   * transaction as the handler's effects.
   */
  store: WithInboxTable<Tx>
  /**
   * Who consumes: one name per logical consumer (`billing-worker`), shared by its
   * instances. Ids of different consumers never meet.
   */
  consumer: string
  /** How long a processed id is remembered. @default 14 days ({@link DEFAULT_INBOX_RETENTION_MS}) */
  retentionMs?: number
  /** The longest time after which the broker may still redeliver a message; a shorter `retentionMs` draws a warning. */
  redeliveryHorizonMs?: number
  /** Derives the id from the message's content, for brokers without stable ids or producers that resend. */
  idOf?: (message: InboxMessage<Body>) => string
  /** Failed attempts before a message is dead-lettered. @default 5 */
  maxAttempts?: number
  /**
   * Deliveries (by the broker's count) after which a message that never finished, with
   * no failure recorded (the process crashed or was killed each time), is dead-lettered
   * without running again. Set it well above `maxAttempts`: nacks for in-flight
   * duplicates or a store outage count too. @default 4 × maxAttempts
   */
  maxDeliveries?: number
  /** How long a duplicate delivery waits for the one being processed before `in-flight`. @default 5000 */
  waitMs?: number
  /**
   * How long the handler may hold its message (from when it starts). Past it the
   * transaction is rolled back, the attempt counts as failed (`OverranError`) and a
   * redelivery runs; what the handler writes later fails. A store that cannot end a
   * transaction under its handler (SQLite's one connection) keeps it until the handler
   * ends, and says so (an `overran-held` warning). Keep it below the broker's redelivery
   * timeout (visibility timeout, ack deadline). @default 300000 (5 minutes)
   */
  deadlineMs?: number
  /** Where the inbox reports each settled message, each dead letter and its warnings. @default the process-wide `idemEvents` */
  events?: EventStream
  /** Receives warnings; without it they go to the event stream, or to `console.warn` when nobody listens. */
  onWarning?: (warning: InboxWarning) => void
}

/** Records each message id once, in the transaction of its handler (see `createInbox`). */
export interface Inbox<Tx, Body = unknown> {
  readonly consumer: string
  readonly retentionMs: number
  readonly maxAttempts: number
  /** How long a duplicate delivery waits for the one being processed before `in-flight`. */
  readonly waitMs: number
  /**
   * Runs `handler` once per message id: in one transaction it records the id, runs the
   * handler (whose writes go through `tx`) and commits. A redelivery resolves as
   * `duplicate` without running the handler. Ack the message only after this resolves
   * with `processed`, `duplicate` or `dead-lettered`; on `failed` or `in-flight`,
   * have the broker redeliver it.
   *
   * @throws StoreUnavailableError / MigrationRequiredError when the store fails (nothing was counted: redeliver)
   */
  consume<T>(message: InboxMessage<Body>, handler: InboxHandler<Tx, Body, T>, options?: ConsumeOptions): Promise<ConsumeResult<T>>
  /**
   * The key a message is recorded under (after `idOf` and hashing of long ids).
   * @throws MissingKeyError when it has no id, InvalidKeyError when its id is not well-formed UTF-16
   */
  keyOf(message: InboxMessage<Body>): string
  /**
   * Tells the inbox how long the broker may redeliver (adapters call it with what they
   * know, e.g. SQS's retention period); warns once if `retentionMs` is shorter.
   */
  expectRedeliveryWithin(horizonMs: number, source?: string): void
}
