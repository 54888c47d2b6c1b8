import { describe } from 'vitest'
import { memoryLeasedStore } from '../../src/stores/memory/index.js'
import { leasedStoreContract } from '../../src/testing/index.js'
import { itFulfils } from '../support/contract.js'

describe('memory leased store contract', () => {
  const store = memoryLeasedStore()
  itFulfils(leasedStoreContract(() => ({
    store,
    unavailableStore: () => {
      const closed = memoryLeasedStore()
      closed.close()
      return closed
    },
  })))
})
