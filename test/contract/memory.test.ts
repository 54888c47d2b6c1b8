import { describe } from 'vitest'
import { memoryStore, type MemoryTx } from '../../src/stores/memory/index.js'
import { itFulfilsTheStoreContract } from '../support/contract.js'

describe('memory store contract', () => {
  const store = memoryStore()
  itFulfilsTheStoreContract(() => ({
    store,
    writeEffect: (tx: MemoryTx, id: string) => {
      const count = (tx.get('effects', id) as number | undefined) ?? 0
      tx.set('effects', id, count + 1)
    },
    countEffects: (id: string) => (store.collection('effects').get(id) as number | undefined) ?? 0,
    unavailableStore: () => {
      const closed = memoryStore()
      closed.close()
      return closed
    },
  }))
})
