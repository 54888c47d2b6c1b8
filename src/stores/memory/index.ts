export { memoryStore, type MemoryStore, type MemoryTx } from './store.js'
