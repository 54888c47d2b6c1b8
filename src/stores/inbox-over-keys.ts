import type { KeyStore } from '../ports/key-store.js'
import type { InboxDeadLetter, InboxSession, InboxTable, PriorFailures } from '../ports/inbox-table.js'

// Any redelivery of an id is the same message: the record's fingerprint is constant.
const INBOX_FINGERPRINT = 'idem-inbox-v1'

/** The inbox's own rows, in one store's dialect, written in the session's transaction or (failures) on their own. */
export interface InboxRows<Tx> {
  takeFailures(tx: Tx, consumer: string, key: string): Promise<PriorFailures | undefined>
  deadLetter(tx: Tx, consumer: string, key: string, letter: InboxDeadLetter): Promise<void>
  recordFailure(consumer: string, key: string, error: string): Promise<number>
}

/**
 * The inbox's table for a store that keeps message ids as keys of its `KeyStore`
 * (SQLite, memory): an id is a key of scope `inbox:<consumer>` whose record is written
 * at commit, in the transaction the handler wrote through.
 */
export function inboxOverKeys<Tx>(keys: Pick<KeyStore<Tx>, 'begin'>, rows: InboxRows<Tx>): InboxTable<Tx> {
  return {
    async begin({ consumer, key, waitMs, retentionMs }): Promise<InboxSession<Tx>> {
      const session = await keys.begin({ scope: `inbox:${consumer}`, key, waitMs })
      const { state } = session.claim
      if (state !== 'new') await session.rollback()
      return {
        state: state === 'new' ? 'new' : state === 'found' ? 'processed' : state === 'locked' ? 'in-flight' : 'stale',
        tx: session.tx,
        takeFailures: () => rows.takeFailures(session.tx, consumer, key),
        deadLetter: (letter) => rows.deadLetter(session.tx, consumer, key, letter),
        commit: () => session.commit({ fingerprint: INBOX_FINGERPRINT, outcome: 'null', ttlMs: retentionMs }),
        rollback: () => session.rollback(),
        ...(session.abandon === undefined ? {} : { abandon: () => session.abandon!() }),
        lost: () => session.lost?.(),
      }
    },
    recordFailure: (consumer, key, error) => rows.recordFailure(consumer, key, error),
  }
}
