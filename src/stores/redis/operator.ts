import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'
import type { KeyInspection, StoreOperator } from '../../ports/operator.js'
import { redisAdapter } from './adapter.js'
import type { RedisKeys } from './keys.js'
import { redisInspect } from './operations.js'
import { DEFAULT_REDIS_PREFIX } from './options.js'
import type { RedisClient } from './types.js'

/** What `redisOperator` takes: the client and the store's key prefix. */
export interface RedisOperatorOptions {
  /** Any client `redisStore` takes (ioredis, iovalkey, node-redis; standalone or Cluster). */
  client: RedisClient
  /** The store's key prefix (`redisStore`'s `prefix`). @default 'idem:' */
  prefix?: string
}

/** The Redis store's operator: `inspect` only (see `redisOperator`). */
export interface RedisOperator extends StoreOperator {
  /** One key's claim, lease and steps, by the server's clock, with the Redis keys that hold them. */
  inspect(scope: string, key: string): Promise<KeyInspection & { keys: RedisKeys }>
}

const OPTIONS = optionNames<RedisOperatorOptions>({ client: true, prefix: true })

/**
 * The operator of a Redis store: one key's claim, lease and steps, read by the server's
 * clock without changing anything. Redis has nothing to prune (each key carries its
 * retention as a TTL), no schema to migrate, and no counts short of walking every key,
 * so the operator has `inspect` only. What `idem inspect --redis` runs.
 * @example
 * const operator = redisOperator({ client: new Redis(), prefix: 'myapp:idem:' })
 * const { lease } = await operator.inspect('acct_1', 'job-7')
 */
export function redisOperator(options: RedisOperatorOptions): RedisOperator {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('redisOperator: pass { client, prefix? }')
  assertKnownOptions('redisOperator', options, OPTIONS)
  const { client, prefix = DEFAULT_REDIS_PREFIX } = options
  const redis = redisAdapter(client, 'redisOperator: option "client"')
  if (typeof prefix !== 'string') throw new InvalidOptionError('redisOperator: option "prefix" must be a string')
  return {
    backend: 'Redis',
    inspect: (scope, key) => redisInspect(redis, prefix, scope, key),
  }
}
