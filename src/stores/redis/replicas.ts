import { createHash } from 'node:crypto'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../../core/validate.js'
import type { RedisClient, RedisPipeline } from './types.js'

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

/** `waitForReplicas` checked, with its default, and the client's pipeline it sends through. */
export interface ReplicaWait {
  readonly count: number
  readonly timeoutMs: number
  readonly pipeline: () => RedisPipeline
}

/**
 * Checks `waitForReplicas` at creation: an object with a `count` of 1–100 and a
 * `timeoutMs` below the store's, on a client that can pipeline.
 * @throws InvalidOptionError naming the option
 */
const WAIT_OPTIONS = optionNames<RedisWaitForReplicas>({ count: true, timeoutMs: true })

export function replicaWait(option: unknown, client: RedisClient, storeTimeoutMs: number): ReplicaWait | undefined {
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
  if (typeof client.pipeline !== 'function') throw new InvalidOptionError(`${name} needs a client with pipeline() (an ioredis Redis or Cluster)`)
  return { count, timeoutMs, pipeline: client.pipeline.bind(client) }
}

/** Runs one script followed by WAIT: its reply, and how many replicas acknowledged its writes. */
export type WaitedScript = (script: string, keys: readonly string[], args: ReadonlyArray<string | number>) => Promise<[reply: unknown, acks: number]>

/**
 * Runs a script and `WAIT` in one pipeline: one connection, in order, one round trip, so
 * WAIT counts the replicas that have the script's writes (WAIT waits for the last write
 * of its own connection, and on Redis Cluster the pipeline goes to the node holding the
 * script's keys). A plain `EVALSHA`, then `EVAL` if the server lost the script, rather
 * than the client's defined command: ioredis sends a defined command that met NOSCRIPT
 * again outside the pipeline, after the WAIT, which would then not cover it. ioredis
 * fails a pipeline cut short by a lost connection as a whole and never sends its rest
 * again alone, so a WAIT never runs on a new connection (where it would count replicas
 * that have nothing of ours).
 */
export function waitedScripts(scripts: Readonly<Record<string, string>>, wait: ReplicaWait): WaitedScript {
  const shas = new Map(Object.entries(scripts).map(([name, lua]) => [name, createHash('sha1').update(lua).digest('hex')]))
  const run = async (pipeline: RedisPipeline): Promise<[unknown, number]> => {
    let replies: Awaited<ReturnType<RedisPipeline['exec']>>
    try {
      replies = await pipeline.wait(wait.count, wait.timeoutMs).exec()
    } catch (error) {
      // On Cluster, ioredis refuses a pipelined script whose keys are in different slots
      // before sending it; Redis would have answered CROSSSLOT (a key an inbox handler
      // staged outside the message's slot), and retrying never helps.
      if (error instanceof Error && error.message.startsWith('All the keys in a pipeline command should belong to the same slot')) {
        throw new Error(`CROSSSLOT Keys in request don't hash to the same slot (${error.message})`, { cause: error })
      }
      throw error
    }
    const [ran, waited] = replies ?? []
    if (ran === undefined || waited === undefined) throw new Error('the pipeline of the script and WAIT was discarded')
    if (ran[0]) throw ran[0]
    if (waited[0]) throw waited[0]
    return [ran[1], Number(waited[1])]
  }
  return async (script, keys, args) => {
    try {
      return await run(wait.pipeline().evalsha(shas.get(script)!, keys.length, ...keys, ...args))
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error
      return await run(wait.pipeline().eval(scripts[script]!, keys.length, ...keys, ...args))
    }
  }
}
