import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { KeyGate } from '../key-gate.js'
import { keyId } from '../../core/identity.js'
import type { BeginRequest, Claim, KeyRecord, KeyStore, NewRecord, Session } from '../../core/store.js'
import type { DeadLetterRow, WithDeadLetterTable } from '../../ports/dead-letter-table.js'
import type { PriorFailures, WithInboxTable } from '../../ports/inbox-table.js'
import { inboxOverKeys } from '../inbox-over-keys.js'
import { MAX_OUTCOME_BYTES } from '../max-outcome.js'

// The collections the inbox's rows live in (read them with `store.collection(name)`).
const ATTEMPTS = 'idem_inbox_attempts'
const DEAD_LETTERS = 'idem_dead_letters'

/**
 * The memory store's transaction: a write set of documents, applied all at once on
 * commit and dropped on rollback, so effects and keys stay atomic as in a database.
 */
export interface MemoryTx {
  /** Stages a document write, visible to `get` in this transaction and to others after commit. */
  set(collection: string, id: string, value: unknown): void
  /** Reads a document, seeing this transaction's own staged writes. */
  get(collection: string, id: string): unknown
}

/**
 * The memory store's tables: the engine's keys (`KeyStore`), the inbox (message ids as
 * keys of scope `inbox:<consumer>`, failure counts and dead letters in collections of
 * their own) and dead letters.
 */
export interface MemoryStore extends KeyStore<MemoryTx>, WithInboxTable<MemoryTx>, WithDeadLetterTable {
  /** The committed documents of a collection (what effects wrote through `tx.set`). */
  collection(name: string): ReadonlyMap<string, unknown>
  /** Makes every later call fail with `StoreUnavailableError`, like a database that went away. */
  close(): void
}

interface StoredRecord extends KeyRecord {
  expiresAt: number
}

/**
 * An in-process store for unit tests, examples and docs. Not durable and not shared
 * between processes; everything else (locking, expiry, atomic effects) behaves as in
 * the SQL stores.
 * @example const idem = createIdem({ store: memoryStore() })
 */
export function memoryStore(): MemoryStore {
  const records = new Map<string, StoredRecord>()
  const collections = new Map<string, Map<string, unknown>>()
  const gate = new KeyGate()
  let closed = false

  function live(id: string): KeyRecord | undefined {
    const record = records.get(id)
    if (record === undefined || record.expiresAt <= Date.now()) return undefined
    return { fingerprint: record.fingerprint, outcome: record.outcome }
  }

  function table(name: string): Map<string, unknown> {
    let map = collections.get(name)
    if (map === undefined) collections.set(name, (map = new Map()))
    return map
  }

  function checkOpen(): void {
    if (closed) throw new StoreUnavailableError('The memory store is closed')
  }

  async function begin({ scope, key, waitMs, tx }: BeginRequest<MemoryTx>): Promise<Session<MemoryTx>> {
    checkOpen()
    if (tx !== undefined) throw new TypeError('The memory store cannot join a transaction; omit "tx"')
    const id = keyId(scope, key)
    // A committed record is final until it expires: replays need not wait for the gate.
    const committed = live(id)
    const leave = committed === undefined ? await gate.enter(id, waitMs) : () => {}
    const staged = new Map<string, Map<string, unknown>>()
    let ended = false
    const memoryTx: MemoryTx = {
      set(collection, docId, value) {
        // A write after the end (a function that ran past its deadline) must not vanish silently.
        if (ended) throw new RangeError('idem/memory: this transaction has ended; the write was not made')
        let writes = staged.get(collection)
        if (writes === undefined) staged.set(collection, (writes = new Map()))
        // A structured clone keeps later mutation by the caller out of the store.
        writes.set(docId, structuredClone(value))
      },
      get(collection, docId) {
        const writes = staged.get(collection)
        return writes?.has(docId) ? writes.get(docId) : collections.get(collection)?.get(docId)
      },
    }
    if (leave === undefined) return { tx: memoryTx, claim: { state: 'locked' }, joined: false, commit: async () => {}, rollback: async () => {} }
    const record = live(id)
    const claim: Claim = record === undefined ? { state: 'new' } : { state: 'found', record }
    return {
      tx: memoryTx,
      claim,
      joined: false,
      async commit(record: NewRecord) {
        ended = true
        try {
          checkOpen()
          for (const [name, writes] of staged) for (const [docId, value] of writes) table(name).set(docId, value)
          records.set(id, { fingerprint: record.fingerprint, outcome: record.outcome, expiresAt: Date.now() + record.ttlMs })
        } finally {
          leave()
        }
      },
      async rollback() {
        if (ended) return
        ended = true
        leave()
      },
      // The staged writes are dropped, and the function's later writes throw.
      async abandon() {
        if (ended) return
        ended = true
        leave()
      },
    }
  }

  let deadLetterSequence = 0
  const inbox = inboxOverKeys<MemoryTx>(
    { begin },
    {
      async takeFailures(tx, consumer, key) {
        const row = tx.get(ATTEMPTS, keyId(consumer, key)) as PriorFailures | null | undefined
        if (row === undefined || row === null) return undefined
        tx.set(ATTEMPTS, keyId(consumer, key), null)
        return row
      },
      async deadLetter(tx, consumer, key, letter) {
        const row: DeadLetterRow = {
          id: String(++deadLetterSequence),
          source: 'inbox',
          name: consumer,
          messageKey: key,
          payload: JSON.parse(letter.payload),
          attempts: letter.attempts,
          lastError: letter.error,
          firstSeenAt: letter.firstSeenAt ?? new Date(),
          deadAt: new Date(),
        }
        tx.set(DEAD_LETTERS, row.id.padStart(12, '0'), row)
      },
      // Synchronous inside: atomic against every other call.
      async recordFailure(consumer, key, error) {
        checkOpen()
        const id = keyId(consumer, key)
        const row = table(ATTEMPTS).get(id) as PriorFailures | null | undefined
        const attempts = (row?.attempts ?? 0) + 1
        table(ATTEMPTS).set(id, { attempts, lastError: error, firstFailedAt: row?.firstFailedAt ?? new Date() })
        return attempts
      },
    },
  )

  return {
    name: 'memory',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    begin,
    inbox,
    deadLetters: {
      async list({ source, name, limit }) {
        checkOpen()
        const rows = [...(collections.get(DEAD_LETTERS)?.values() ?? [])] as DeadLetterRow[]
        return rows
          .filter((row) => row.source === source && (name === null || row.name === name))
          .reverse()
          .slice(0, limit)
          .map((row) => structuredClone(row))
      },
    },
    collection: (name) => new Map(collections.get(name)),
    close: () => {
      closed = true
    },
  }
}
