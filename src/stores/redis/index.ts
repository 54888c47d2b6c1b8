export { redisStore } from './store.js'
export { DEFAULT_REDIS_HOLD_MS, DEFAULT_REDIS_PREFIX, DEFAULT_REDIS_TIMEOUT_MS, type RedisStore, type RedisStoreOptions } from './options.js'
export { redisInboxKey, redisInboxKeys, redisKeys, type RedisInboxKeys, type RedisKeys } from './keys.js'
export type { RedisTx } from './inbox-table.js'
export { redisOperator, type RedisOperator, type RedisOperatorOptions } from './operator.js'
export type { IoRedisClient, IoRedisPipeline, NodeRedisClient, NodeRedisCluster, RedisClient } from './types.js'
export type { RedisWaitForReplicas } from './replicas.js'
/** Every Lua script the Redis store runs, one per transition, by name. */
export * as redisScripts from './scripts.js'
