import { it } from 'vitest'
import { leasedStoreContract, type LeasedStoreHarness } from '../../src/testing/index.js'

/** Registers every leased-store contract case as a vitest test. */
export function itFulfilsTheLeasedStoreContract(harness: () => LeasedStoreHarness): void {
  for (const { name, run } of leasedStoreContract(harness)) it(name, run)
}
