import { describe } from 'vitest'
import { memoryStore, type MemoryTx } from '../../src/stores/memory/index.js'
import { inboxTableContract, keyStoreContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'

describe('memory store contracts', () => {
  const store = memoryStore()
  const effects = {
    writeEffect: (tx: MemoryTx, id: string) => {
      const count = (tx.get('effects', id) as number | undefined) ?? 0
      tx.set('effects', id, count + 1)
    },
    countEffects: (id: string) => (store.collection('effects').get(id) as number | undefined) ?? 0,
  }
  const unavailableStore = () => {
    const closed = memoryStore()
    closed.close()
    return closed
  }
  describe('keys (KeyStore)', () => itFulfils(keyStoreContract(() => ({ store, ...effects, unavailableStore }))))
  describe('inbox (InboxTable, ids as keys)', () => itFulfils(inboxTableContract(() => ({ store, ...effects, unavailableStore }))))
})
