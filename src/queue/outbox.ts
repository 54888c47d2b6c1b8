import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertDuration, assertKnownOptions, assertName, optionNames } from '../core/errors/option-checks.js'
import type { OutboxInsert, OutboxTable, WithOutboxTable } from '../ports/outbox-table.js'

/** One effect to deliver later: a publish, an email, a webhook call. */
export interface OutboxEntry {
  /** Where it goes (a subject, a queue, "email"): the dispatcher's deliverer routes on it. 1–200 characters. */
  topic: string
  /** What is delivered: any JSON value. */
  payload: unknown
  /**
   * A stable key for this effect, passed to the deliverer so the receiving side can
   * drop duplicates (NATS `Nats-Msg-Id`, an email provider's idempotency key). Derive it
   * from the intent (`claim-received:<claimId>`), never mint it per attempt. 1–255
   * characters. A second add with the same topic and key is ignored.
   */
  dedupeKey: string
  /** Deliver no sooner than this many milliseconds after commit. @default 0 */
  delayMs?: number
}

/** What `createOutbox` takes: the store. */
export interface OutboxOptions<Tx, Added extends boolean | Promise<boolean>> {
  /** The store whose outbox table effects are queued in (`postgresStore`, `sqliteStore`): the one your transaction runs on. */
  store: WithOutboxTable<Tx, Added>
}

/**
 * Adds messages to send in the caller's transaction, so they leave if and only if it
 * commits (see `createOutbox`).
 */
export interface Outbox<Tx, Added extends boolean | Promise<boolean> = Promise<boolean>> {
  /**
   * Queues `entry` in the caller's transaction: it commits with the caller's other
   * writes or not at all, so "the effect is owed" and "the state changed" never
   * disagree. Pass your open transaction (inside `idem.run` or `inbox.consume`, the `tx`
   * you were given); on SQLite the call is synchronous and refuses to run outside a
   * transaction.
   * @returns true when queued now, false when `(topic, dedupeKey)` was already queued
   * @throws InvalidOptionError for a malformed entry; MigrationRequiredError when the outbox table is missing
   */
  add(tx: Tx, entry: OutboxEntry): Added
}

const MAX_DEDUPE_KEY_LENGTH = 255

const OPTIONS = optionNames<OutboxOptions<unknown, boolean>>({ store: true })
const ENTRY = optionNames<OutboxEntry>({ topic: true, payload: true, dedupeKey: true, delayMs: true })

/**
 * The transactional outbox: effects queued inside a transaction, delivered after
 * commit by a dispatcher (`createDispatcher`) over the same store.
 *
 * @throws InvalidOptionError at creation when the store has no outbox table
 * @example
 * const outbox = createOutbox({ store })
 * await inbox.consume(message, async (tx) => {
 *   await tx.query('INSERT INTO claims …')
 *   await outbox.add(tx, { topic: 'email', payload: { to, template: 'claim-received' }, dedupeKey: `claim-received:${claimId}` })
 * })
 * @see docs/queue.md
 */
export function createOutbox<Tx, Added extends boolean | Promise<boolean>>(options: OutboxOptions<Tx, Added>): Outbox<Tx, Added> {
  assertKnownOptions('createOutbox', options, OPTIONS)
  const { store } = options
  const table = outboxTableOf(store, 'createOutbox')
  return { add: (tx, entry) => table.add(tx, checkEntry(entry)) }
}

/** The outbox table of a store, or a start-up error naming what it lacks. */
export function outboxTableOf<Tx, Added extends boolean | Promise<boolean>>(store: WithOutboxTable<Tx, Added> | undefined, caller: string): OutboxTable<Tx, Added> {
  if (store === null || typeof store !== 'object') {
    throw new InvalidOptionError(`${caller}: option "store" is required: a store with an outbox table (postgresStore, sqliteStore)`)
  }
  const table = (store as Partial<WithOutboxTable<Tx, Added>>).outbox
  if (table === null || typeof table !== 'object' || typeof table.add !== 'function' || typeof table.claim !== 'function') {
    const name = typeof store.name === 'string' ? `"${store.name}" ` : ''
    throw new InvalidOptionError(`${caller}: option "store" (${name}store) has no outbox table; pass postgresStore(...) or sqliteStore(...)`)
  }
  return table
}

/**
 * A `\\uD800`–`\\uDFFF` escape that JSON.stringify wrote: it escapes lone surrogates only
 * (a paired one is written as itself), and an escape is preceded by an even number of
 * backslashes (an odd run would be an escaped backslash followed by the letters).
 */
const ESCAPED_LONE_SURROGATE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/

function checkEntry(entry: OutboxEntry): OutboxInsert {
  if (entry === null || typeof entry !== 'object') throw new InvalidOptionError('outbox.add: pass { topic, payload, dedupeKey }')
  assertKnownOptions('outbox.add', entry, ENTRY)
  assertName('outbox.add: "topic"', entry.topic)
  assertName('outbox.add: "dedupeKey"', entry.dedupeKey, MAX_DEDUPE_KEY_LENGTH)
  const delayMs = entry.delayMs ?? 0
  assertDuration('outbox.add: "delayMs"', delayMs, 0)
  let payload: string | undefined
  try {
    payload = JSON.stringify(entry.payload)
  } catch (cause) {
    throw new InvalidOptionError(`outbox.add: "payload" must be JSON data: ${(cause as Error).message}`, { cause })
  }
  if (payload === undefined) throw new InvalidOptionError('outbox.add: "payload" must be JSON data (got undefined)')
  if (payload.includes('\\u') && ESCAPED_LONE_SURROGATE.test(payload)) {
    throw new InvalidOptionError(
      'outbox.add: "payload" holds a string that is not well-formed UTF-16 (a lone surrogate), which JSON storage cannot keep (Postgres refuses it, UTF-8 text folds it into U+FFFD); encode such data, e.g. as base64',
    )
  }
  return { topic: entry.topic, dedupeKey: entry.dedupeKey, payload, delayMs }
}
