import { it } from 'vitest'
import type { ContractCase } from '../../src/testing/index.js'

/** Registers contract cases (from `keyStoreContract`, `inboxTableContract`, …) as vitest tests. */
export function itFulfils(cases: readonly ContractCase[]): void {
  for (const { name, run } of cases) it(name, run)
}
