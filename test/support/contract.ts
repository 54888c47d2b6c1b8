import { it } from 'vitest'
import type { ContractCase } from '../../src/testing/index.js'

/** Registers contract cases (from `keyStoreContract`, `inboxTableContract`, …) as vitest tests. */
export function itFulfils(cases: readonly ContractCase[]): void {
  for (const { name, run } of cases) it(name, run)
}

/**
 * The `timeoutMs` of a store whose server is up, in a contract run. A store's timeout is
 * there to notice an unreachable server; against a healthy one, a budget short enough to
 * matter (Redis's default of 1 s) only measures how busy the machine is: a 16 MiB step or
 * outcome through a Redis Cluster overran it on a loaded two-core machine. So the run
 * waits for the answer, and this only bounds a server that truly hangs, below vitest's
 * own test timeout so such a case still fails naming the store.
 */
export const HEALTHY_STORE_TIMEOUT_MS = 30_000
