import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { KeyGate } from '../key-gate.js'
import { keyId } from '../../ports/key-store.js'
import type { BeginRequest, Claim, KeyRecord, KeyStore, NewRecord, Session } from '../../ports/key-store.js'
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

/** What one memory store holds: its records, its collections, whether it was closed. */
interface MemoryState {
  readonly records: Map<string, StoredRecord>
  readonly collections: Map<string, Map<string, unknown>>
  readonly gate: KeyGate
  closed: boolean
}

function live(state: MemoryState, id: string): KeyRecord | undefined {
  const record = state.records.get(id)
  if (record === undefined || record.expiresAt <= Date.now()) return undefined
  return { fingerprint: record.fingerprint, outcome: record.outcome }
}

function table(state: MemoryState, name: string): Map<string, unknown> {
  let map = state.collections.get(name)
  if (map === undefined) state.collections.set(name, (map = new Map()))
  return map
}

function checkOpen(state: MemoryState): void {
  if (state.closed) throw new StoreUnavailableError('The memory store is closed')
}

/**
 * An in-process store for unit tests, examples and docs. Not durable and not shared
 * between processes; everything else (locking, expiry, atomic effects) behaves as in
 * the SQL stores.
 * @example const idem = createIdem({ store: memoryStore() })
 */
export function memoryStore(): MemoryStore {
  const state: MemoryState = { records: new Map(), collections: new Map(), gate: new KeyGate(), closed: false }
  const begin = (request: BeginRequest<MemoryTx>): Promise<Session<MemoryTx>> => beginSession(state, request)
  return {
    name: 'memory',
    maxOutcomeBytes: MAX_OUTCOME_BYTES,
    begin,
    inbox: memoryInbox(state, begin),
    deadLetters: {
      async list({ source, name, limit }) {
        checkOpen(state)
        const rows = [...(state.collections.get(DEAD_LETTERS)?.values() ?? [])] as DeadLetterRow[]
        return rows
          .filter((row) => row.source === source && (name === null || row.name === name))
          .reverse()
          .slice(0, limit)
          .map((row) => structuredClone(row))
      },
    },
    collection: (name) => new Map(state.collections.get(name)),
    close: () => {
      state.closed = true
    },
  }
}

/** A transaction's staged writes, read through by its own `get`; `ended` says whether a write may still be made. */
function stagedTx(state: MemoryState, staged: Map<string, Map<string, unknown>>, ended: () => boolean): MemoryTx {
  return {
    set(collection, docId, value) {
      // A write after the end (a function that ran past its deadline) must not vanish silently.
      if (ended()) throw new RangeError('idem/memory: this transaction has ended; the write was not made')
      let writes = staged.get(collection)
      if (writes === undefined) staged.set(collection, (writes = new Map()))
      // A structured clone keeps later mutation by the caller out of the store.
      writes.set(docId, structuredClone(value))
    },
    get(collection, docId) {
      const writes = staged.get(collection)
      return writes?.has(docId) ? writes.get(docId) : state.collections.get(collection)?.get(docId)
    },
  }
}

async function beginSession(state: MemoryState, { scope, key, waitMs, tx }: BeginRequest<MemoryTx>): Promise<Session<MemoryTx>> {
  checkOpen(state)
  if (tx !== undefined) throw new TypeError('The memory store cannot join a transaction; omit "tx"')
  const id = keyId(scope, key)
  // A committed record is final until it expires: replays need not wait for the gate.
  const leave = live(state, id) === undefined ? await state.gate.enter(id, waitMs) : () => {}
  const staged = new Map<string, Map<string, unknown>>()
  let ended = false
  const memoryTx = stagedTx(state, staged, () => ended)
  if (leave === undefined) return { tx: memoryTx, claim: { state: 'locked' }, joined: false, commit: async () => {}, rollback: async () => {} }
  const record = live(state, id)
  const claim: Claim = record === undefined ? { state: 'new' } : { state: 'found', record }
  // The staged writes are dropped on a rollback or an abandon, and the function's later writes throw.
  const end = async (): Promise<void> => {
    if (ended) return
    ended = true
    leave()
  }
  return {
    tx: memoryTx,
    claim,
    joined: false,
    async commit(record: NewRecord) {
      ended = true
      try {
        checkOpen(state)
        for (const [name, writes] of staged) for (const [docId, value] of writes) table(state, name).set(docId, value)
        state.records.set(id, { fingerprint: record.fingerprint, outcome: record.outcome, expiresAt: Date.now() + record.ttlMs })
      } finally {
        leave()
      }
    },
    rollback: end,
    abandon: end,
  }
}

/** The inbox over the store's keys: failure counts and dead letters in collections of their own. */
function memoryInbox(state: MemoryState, begin: KeyStore<MemoryTx>['begin']): MemoryStore['inbox'] {
  let deadLetterSequence = 0
  return inboxOverKeys<MemoryTx>(
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
        checkOpen(state)
        const id = keyId(consumer, key)
        const row = table(state, ATTEMPTS).get(id) as PriorFailures | null | undefined
        const attempts = (row?.attempts ?? 0) + 1
        table(state, ATTEMPTS).set(id, { attempts, lastError: error, firstFailedAt: row?.firstFailedAt ?? new Date() })
        return attempts
      },
    },
  )
}
