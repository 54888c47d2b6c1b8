export { redisStore, DEFAULT_REDIS_PREFIX, DEFAULT_REDIS_TIMEOUT_MS, type RedisStore, type RedisStoreOptions } from './store.js'
export { redisKeys, type RedisKeys } from './keys.js'
export type { RedisClient } from './types.js'
export * as redisScripts from './scripts.js'
