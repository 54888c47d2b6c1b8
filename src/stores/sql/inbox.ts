import type { InboxClaim, InboxDeadLetter, InboxSession, InboxTable, PriorFailures } from '../../ports/inbox-table.js'
import { settledInboxSession } from '../settled-inbox-session.js'
import type { InboxStatements } from './dialect.js'
import type { Connection, StoreDriver } from './driver.js'
import { fences, HeldTransaction, type Fenced } from './key-sessions.js'
import type { Step } from './statement.js'
import { toDate } from './values.js'

/**
 * The inbox's protocol over a SQL store's dialect and driver: a delivery's id claimed in
 * the round trip that opens its transaction (written at once where the dialect can
 * `mark` it, so its commit is a bare COMMIT), the handler's writes through that
 * transaction, the id recorded at commit; failures counted in a statement of their own.
 * Where a read costs no round trip (`lookup`), a redelivery of a processed id is answered
 * by a read first, without waiting for anything.
 */
export function inboxTable<Tx>(inbox: InboxStatements, driver: StoreDriver<Tx, boolean | Promise<boolean>>): InboxTable<Tx> {
  const context: Context<Tx> = { inbox, driver, opening: { statement: inbox.opening }, commit: { statement: inbox.commit } }
  return {
    begin: (claim) => begin(context, claim),
    async recordFailure(consumer, key, error) {
      // One upsert, atomic by itself: concurrent failures of a message each count once.
      const [counted] = await driver.transaction([inbox.recordFailure(consumer, key, error, Date.now())])
      return Number((counted!.rows[0] as { attempts: number | string }).attempts)
    },
  }
}

/** What every session of one table shares. */
interface Context<Tx> {
  readonly inbox: InboxStatements
  readonly driver: StoreDriver<Tx, boolean | Promise<boolean>>
  readonly opening: Step
  readonly commit: Step
}

async function begin<Tx>(context: Context<Tx>, { consumer, key, waitMs, retentionMs }: InboxClaim): Promise<InboxSession<Tx>> {
  const { inbox, driver } = context
  if (inbox.lookup !== undefined) {
    const read = await driver.lookup(inbox.lookup(consumer, key, Date.now()))
    if (read !== undefined && read.rows.length > 0) return settledInboxSession('processed', read.tx)
  }
  // Ids and keys share no lock: an id locks as a key of scope `inbox:<consumer>` would.
  const connection = await driver.connect({ scope: `inbox:${consumer}`, key, waitMs })
  if (connection.locked === true) return settledInboxSession('in-flight', connection.tx)
  let state: string
  let marked = false
  try {
    const now = Date.now()
    if (inbox.mark !== undefined) {
      const [, mark] = await connection.send([context.opening, inbox.mark(consumer, key, retentionMs, now)], 'opens')
      marked = mark?.rowCount === 1
      // A recorded id, or another delivery holding it: claimed the usual way, in the same transaction.
      state = marked ? 'new' : stateOf((await connection.send([inbox.claim(consumer, key, waitMs, now)], 'inside'))[0]?.rows[0])
    } else {
      const [, claim] = await connection.send([context.opening, inbox.claim(consumer, key, waitMs, now)], 'opens')
      state = stateOf(claim?.rows[0])
    }
  } catch (error) {
    await connection.end(error)
    throw error
  }
  const held: Held = { consumer, key, retentionMs, marked }
  if (state === 'new') return fences(connection) ? new FencedInboxSession(context, connection, held) : new ClaimedSession(context, connection, held)
  // Nothing was written: ending it need not delay the answer (it never rejects).
  void connection.end()
  return settledInboxSession(state === 'found' ? 'processed' : state === 'locked' ? 'in-flight' : 'stale', connection.tx)
}

/** The state a claim's row says (none: a new id). */
function stateOf(row: unknown): string {
  if (row === undefined) return 'new'
  const { state } = row as { state?: unknown }
  if (state === 'new' || state === 'found' || state === 'locked' || state === 'stale') return state
  throw new Error(`an inbox claim returned an unexpected row: ${JSON.stringify(row)}`)
}

/** The message a session holds. */
interface Held {
  readonly consumer: string
  readonly key: string
  readonly retentionMs: number
  /** The claim wrote the id's row already: the commit is a bare COMMIT. */
  readonly marked: boolean
}

/** A message this delivery holds: its transaction, open on a connection of its own until commit or rollback. */
class ClaimedSession<Tx> extends HeldTransaction<Tx> implements InboxSession<Tx> {
  readonly state = 'new'
  readonly #context: Context<Tx>
  readonly #held: Held

  constructor(context: Context<Tx>, connection: Connection<Tx>, held: Held) {
    super(connection)
    this.#context = context
    this.#held = held
  }

  async takeFailures(): Promise<PriorFailures | undefined> {
    const { consumer, key } = this.#held
    const { rows } = await this.connection.run(this.#context.inbox.takeFailures(consumer, key))
    const row = rows[0] as { attempts: number | string; last_error: string; first_failed_at: Date | number } | undefined
    return row && { attempts: Number(row.attempts), lastError: row.last_error, firstFailedAt: toDate(row.first_failed_at) }
  }

  async deadLetter(letter: InboxDeadLetter): Promise<void> {
    const { consumer, key } = this.#held
    await this.connection.run(this.#context.inbox.deadLetter(consumer, key, letter, Date.now()))
  }

  commit(): Promise<void> {
    const { inbox, commit } = this.#context
    const { consumer, key, retentionMs, marked } = this.#held
    return this.finish(marked ? [commit] : [inbox.save(consumer, key, retentionMs, Date.now()), commit])
  }
}

/** A claimed session whose connection can be ended while the handler still holds it (`InboxSession.abandon`). */
class FencedInboxSession<Tx> extends ClaimedSession<Tx> {
  declare protected readonly connection: Fenced<Tx>

  // The handler may still be using the connection: it is closed, not handed back.
  async abandon(): Promise<void> {
    if (this.ends()) await this.connection.abandon()
  }
}
