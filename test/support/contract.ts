import { it } from 'vitest'
import { storeContract, type StoreHarness } from '../../src/testing/index.js'

/** Registers every store-contract case as a vitest test (`keepsOutcomes: false` for an id table, see storeContract). */
export function itFulfilsTheStoreContract<Tx>(harness: () => StoreHarness<Tx>, options?: { keepsOutcomes?: boolean }): void {
  for (const { name, run } of storeContract(harness, options)) it(name, run)
}
