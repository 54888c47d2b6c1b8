export { memoryStore, type MemoryStore, type MemoryTx } from './store.js'
export { memoryLeasedStore, type MemoryLeasedStore } from './leased.js'
