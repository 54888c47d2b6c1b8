import { it } from 'vitest'
import { storeContract, type StoreHarness } from '../../src/testing/index.js'

/** Registers every store-contract case as a vitest test. */
export function itFulfilsTheStoreContract<Tx>(harness: () => StoreHarness<Tx>): void {
  for (const { name, run } of storeContract(harness)) it(name, run)
}
