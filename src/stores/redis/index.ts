export { redisStore, DEFAULT_REDIS_PREFIX, DEFAULT_REDIS_TIMEOUT_MS, type RedisStore, type RedisStoreOptions } from './store.js'
export { redisKeys, type RedisKeys } from './keys.js'
export type { RedisClient } from './types.js'
/** Every Lua script the Redis store runs, one per transition, by the command name it is defined under. */
export * as redisScripts from './scripts.js'
