import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertIdentity } from '../core/identity.js'
import { assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import type { OnceTable, WithOnceTable } from '../ports/once-table.js'

/** What a gate is about: stored as text, so `42`, `42n` and `'42'` are the same subject. */
export type OnceSubject = string | number | bigint

/** `once(tx, kind, subject)`: see `createOnce`. */
export type Once<Tx, Marked extends boolean | Promise<boolean>> = (tx: Tx, kind: string, subject: OnceSubject) => Marked

const MAX_KIND_LENGTH = 200
const MAX_SUBJECT_LENGTH = 1024

const OPTIONS = optionNames<Parameters<typeof createOnce>[0]>({ store: true })

/**
 * Creates `once(tx, kind, subject)`, a first-time gate for a side effect, such as "send
 * the claim-received email for claim 42": it returns true the first time
 * `(kind, subject)` is seen and false ever after. The mark is written in the caller's
 * transaction `tx` (in the store's `idem_once`), so it commits with the caller's other
 * writes and a rollback forgets it (the next attempt gets true again). A concurrent
 * transaction asking for the same pair waits until the first one commits (then gets
 * false) or rolls back (then gets true). Marks are kept until you delete them.
 *
 * On SQLite `once` is synchronous, so it fits in a transaction (`db.transaction(...)`,
 * or the store's `transaction` on node:sqlite, which has none), and it refuses to run
 * outside one; on Postgres pass the client of your open transaction.
 *
 * @throws InvalidOptionError at creation when the store has no once table; on a call,
 *   for a malformed kind or subject, or (SQLite) no open transaction
 * @throws MigrationRequiredError when `idem_once` does not exist
 * @example
 * const once = createOnce({ store: postgresStore({ pool }) })
 * await client.query('BEGIN')
 * if (await once(client, 'claim-received-email', claimId)) await outbox.add(client, email)
 * await client.query('COMMIT')
 * @see docs/data.md
 */
export function createOnce<Tx, Marked extends boolean | Promise<boolean>>(options: { store: WithOnceTable<Tx, Marked> }): Once<Tx, Marked> {
  assertKnownOptions('createOnce', options, OPTIONS)
  const { store } = options
  const table = onceTableOf(store)
  return function once(tx, kind, subject) {
    assertKind(kind)
    return table.mark(tx, kind, subjectText(subject))
  }
}

function onceTableOf<Tx, Marked extends boolean | Promise<boolean>>(store: WithOnceTable<Tx, Marked> | undefined): OnceTable<Tx, Marked> {
  const table = (store as Partial<WithOnceTable<Tx, Marked>> | null | undefined)?.once
  if (table === null || typeof table !== 'object' || typeof table.mark !== 'function') {
    throw new InvalidOptionError('createOnce: option "store" must be a store with a once table (postgresStore, sqliteStore, dynamodbStore)')
  }
  return table
}

function assertKind(kind: unknown): asserts kind is string {
  assertIdentity('once: "kind"', kind, MAX_KIND_LENGTH, InvalidOptionError)
}

function subjectText(subject: unknown): string {
  if (typeof subject === 'bigint') return subject.toString(10)
  if (typeof subject === 'number' && Number.isSafeInteger(subject)) return String(subject)
  if (typeof subject !== 'string') {
    throw new InvalidOptionError(`once: "subject" must be a string, a safe integer or a bigint, got ${JSON.stringify(subject) ?? typeof subject}`)
  }
  assertIdentity('once: "subject"', subject, MAX_SUBJECT_LENGTH, InvalidOptionError)
  return subject
}
