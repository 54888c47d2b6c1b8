import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../../core/errors/option-checks.js'

/**
 * What `redisStore`'s `waitForReplicas` takes. Redis replicates asynchronously: a write
 * the primary acknowledged can be lost when a replica that never got it is promoted.
 * With this option every write a later call relies on is followed by `WAIT count
 * timeoutMs` on the same connection (in the same round trip), and counts only once
 * `count` replicas have it; fewer is `StoreUnavailableError`. See docs/guarantees.md.
 */
export interface RedisWaitForReplicas {
  /** How many replicas must have a write before it counts (WAIT's numreplicas): 1–100. */
  count: number
  /**
   * How long a write waits for them (WAIT's timeout), in milliseconds; less than the
   * store's `timeoutMs`. While fewer replicas are connected every such write waits this
   * long and fails, one after another on the connection, so keep it short.
   * @default half the store's timeoutMs
   */
  timeoutMs?: number
}

/** `waitForReplicas` checked, with its default. */
export interface ReplicaWait {
  readonly count: number
  readonly timeoutMs: number
}

const WAIT_OPTIONS = optionNames<RedisWaitForReplicas>({ count: true, timeoutMs: true })

/**
 * Checks `waitForReplicas` at creation: an object with a `count` of 1–100 and a
 * `timeoutMs` below the store's.
 * @throws InvalidOptionError naming the option
 */
export function replicaWait(option: unknown, storeTimeoutMs: number): ReplicaWait | undefined {
  if (option === undefined) return undefined
  const name = 'redisStore: option "waitForReplicas"'
  if (option === null || typeof option !== 'object' || Array.isArray(option)) throw new InvalidOptionError(`${name} must be { count, timeoutMs? }`)
  assertKnownOptions(name, option, WAIT_OPTIONS)
  const { count, timeoutMs = Math.floor(storeTimeoutMs / 2) } = option as RedisWaitForReplicas
  assertCount('redisStore: option "waitForReplicas.count"', count, 1, 100)
  assertDuration('redisStore: option "waitForReplicas.timeoutMs"', timeoutMs, 1)
  if (timeoutMs >= storeTimeoutMs) {
    throw new InvalidOptionError(
      `redisStore: option "waitForReplicas.timeoutMs" (${timeoutMs}) must be less than option "timeoutMs" (${storeTimeoutMs}), or the store gives up before WAIT answers`,
    )
  }
  return { count, timeoutMs }
}
