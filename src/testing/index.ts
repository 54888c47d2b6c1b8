export { storeContract, type StoreHarness, type ContractCase } from './contract.js'
export { startFaultProxy, seededRandom, type FaultProxy, type FaultProxyOptions, type FaultProxyStats } from './faults.js'
export { leasedStoreContract, type LeasedStoreHarness } from './leased-contract.js'
