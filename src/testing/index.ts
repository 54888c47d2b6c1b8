export { storeContract, type StoreHarness, type ContractCase } from './contract.js'
export { startFaultProxy, seededRandom, type FaultProxy, type FaultProxyOptions, type FaultProxyStats } from './faults.js'
export { startTcpFaultProxy, type TcpFaultProxy, type TcpFaultProxyOptions, type TcpFaultProxyStats } from './tcp-proxy.js'
export { leasedStoreContract, type LeasedStoreHarness } from './leased-contract.js'
