export { storeContract, type StoreHarness, type ContractCase } from './contract.js'
