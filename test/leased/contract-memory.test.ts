import { describe } from 'vitest'
import { memoryLeasedStore } from '../../src/stores/memory/index.js'
import { itFulfilsTheLeasedStoreContract } from './contract.js'

describe('memory leased store contract', () => {
  const store = memoryLeasedStore()
  itFulfilsTheLeasedStoreContract(() => ({
    store,
    unavailableStore: () => {
      const closed = memoryLeasedStore()
      closed.close()
      return closed
    },
  }))
})
