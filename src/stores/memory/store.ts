import { StoreUnavailableError } from '../../core/errors/store-unavailable.js'
import { KeyGate } from '../../core/key-gate.js'
import { keyId } from '../../core/key.js'
import type { BeginRequest, Claim, KeyRecord, NewRecord, Session, Store } from '../../core/store.js'

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

export interface MemoryStore extends Store<MemoryTx> {
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
    const memoryTx: MemoryTx = {
      set(collection, docId, value) {
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
    let ended = false
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
    }
  }

  return {
    name: 'memory',
    begin,
    collection: (name) => new Map(collections.get(name)),
    close: () => {
      closed = true
    },
  }
}
