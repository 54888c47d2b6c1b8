export { redisStore, DEFAULT_REDIS_HOLD_MS, DEFAULT_REDIS_PREFIX, DEFAULT_REDIS_TIMEOUT_MS, type RedisStore, type RedisStoreOptions } from './store.js'
export { redisInboxKey, redisInboxKeys, redisKeys, type RedisInboxKeys, type RedisKeys } from './keys.js'
export type { RedisTx } from './inbox-table.js'
export { redisOperator, type RedisOperator, type RedisOperatorOptions } from './operator.js'
export type { RedisReadingClient } from './operations.js'
export type { RedisClient, RedisPipeline } from './types.js'
export type { RedisWaitForReplicas } from './replicas.js'
/** Every Lua script the Redis store runs, one per transition, by the command name it is defined under. */
export * as redisScripts from './scripts.js'
