/**
 * `idem/testing`: the contract suites every store runs (and a store author can run
 * against their own), and the fault proxies the tests and the demo inject faults with.
 * The fault proxies are Node servers (`node:http`, `node:net`) and run on Node only; the
 * contract suites run on Bun and Deno too.
 * @see docs/stores.md
 * @see docs/runtimes.md
 */
export { keyStoreContract, type StoreHarness, type ContractCase } from './key-store-contract.js'
export { leasedStoreContract, type LeasedStoreHarness } from './leased-contract.js'
export { inboxTableContract, type InboxTableHarness } from './inbox-table-contract.js'
export { outboxTableContract, type OutboxTableHarness } from './outbox-table-contract.js'
export { onceTableContract, type OnceTableHarness } from './once-table-contract.js'
export { startFaultProxy, seededRandom, type FaultProxy, type FaultProxyOptions, type FaultProxyStats } from './faults.js'
export { startTcpFaultProxy, type TcpFaultProxy, type TcpFaultProxyOptions, type TcpFaultProxyStats } from './tcp-proxy.js'
