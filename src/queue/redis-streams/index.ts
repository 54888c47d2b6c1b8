/**
 * `idem/queue/redis-streams`: Redis Streams consumer groups through ioredis (or any
 * client with `call(command, ...args)`).
 * - id: the entry's `id` field when present (the outbox deliverer writes the dedupe key there), else the entry id
 * - ack → `XACK`; nack(delay) → after the delay, mark the entry idle so the next `XAUTOCLAIM` pass takes it again;
 *   dead letter → `XADD <stream>:dead` and `XACK`, atomically (a Lua script)
 * - stuck entries (a consumer died holding them) are taken over with `XAUTOCLAIM` after `claimIdleMs`
 * - delivery count: 1 for new entries; for reclaimed ones, the group's counter (`XPENDING`)
 * @see docs/queue.md
 */
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import { idemEvents, warn } from '../../core/events.js'
import { assertCount, assertDuration, assertKnownOptions, assertName, optionNames } from '../../core/errors/option-checks.js'
import type { DeliveryContext, OutboxRow } from '../dispatcher.js'
import type { MessageSource, Subscription } from '../source.js'
import type { RedisCaller, RedisStreamSourceOptions } from './options.js'
import { startReading, type StreamSettings } from './reading.js'

export { streamEntries, type Entry } from './entries.js'

export type { RedisCaller, RedisClient, RedisStreamSourceOptions } from './options.js'

const SOURCE_OPTIONS = optionNames<RedisStreamSourceOptions>({
  redis: true, stream: true, group: true, consumer: true, count: true, blockMs: true, claimIdleMs: true, claimEveryMs: true,
  idField: true, bodyField: true, deadLetterStream: true, startId: true, onError: true,
})

/**
 * Reads a Redis stream through a consumer group.
 * @example
 * const source = redisStreamSource({ redis: new Redis(), stream: 'claims', group: 'intake', consumer: `intake-${process.pid}` })
 * await startConsumer({ inbox, source, handler })
 */
export function redisStreamSource(options: RedisStreamSourceOptions): MessageSource {
  const settings = sourceSettings(options)
  const { redis, stream, group, startId } = settings
  return {
    name: `redis:${stream}/${group}`,
    async subscribe(onDelivery): Promise<Subscription> {
      try {
        await redis.call('XGROUP', 'CREATE', stream, group, startId, 'MKSTREAM')
      } catch (error) {
        if (!String((error as Error)?.message).includes('BUSYGROUP')) throw error
      }
      return startReading(settings, onDelivery)
    },
  }
}

/** The options with their defaults, checked. */
function sourceSettings(options: RedisStreamSourceOptions): StreamSettings {
  assertKnownOptions('redisStreamSource', options, SOURCE_OPTIONS)
  const {
    redis,
    stream,
    group,
    consumer,
    count = 20,
    blockMs = 1_000,
    claimIdleMs = 30_000,
    claimEveryMs = 1_000,
    idField = 'id',
    bodyField = 'body',
    deadLetterStream = `${stream}:dead`,
    startId = '0',
    onError = (error) => warn(idemEvents, { code: 'source-read-error', source: 'redisStreamSource', message: `idem redisStreamSource(${stream}): ${error instanceof Error ? error.message : String(error)}`, cause: error }),
  } = options
  const caller = 'redisStreamSource'
  if (redis === null || typeof redis !== 'object' || typeof redis.call !== 'function' || typeof redis.duplicate !== 'function') {
    throw new InvalidOptionError(`${caller}: option "redis" must be an ioredis client`)
  }
  assertName(`${caller}: option "stream"`, stream, 1_000)
  assertName(`${caller}: option "group"`, group, 1_000)
  assertName(`${caller}: option "consumer"`, consumer, 1_000)
  assertCount(`${caller}: option "count"`, count, 1, 10_000)
  assertDuration(`${caller}: option "blockMs"`, blockMs, 1)
  assertDuration(`${caller}: option "claimIdleMs"`, claimIdleMs, 1)
  assertDuration(`${caller}: option "claimEveryMs"`, claimEveryMs, 1)
  if (deadLetterStream !== null) assertName(`${caller}: option "deadLetterStream"`, deadLetterStream, 1_000)
  return { redis, stream, group, consumer, count, blockMs, claimIdleMs, claimEveryMs, idField, bodyField, deadLetterStream, startId, onError }
}

/** What `redisStreamDeliverer` takes: the client, the stream of each row, and trimming. */
export interface RedisStreamDelivererOptions {
  redis: RedisCaller
  /** @default the row's topic */
  stream?: (row: OutboxRow) => string
  /** Trim the stream to about this many entries (`MAXLEN ~`). @default no trimming */
  maxLen?: number
}

const DELIVERER_OPTIONS = optionNames<RedisStreamDelivererOptions>({ redis: true, stream: true, maxLen: true })

/**
 * An outbox deliverer that appends each row to a stream with the dedupe key in the `id`
 * field and the JSON payload in `body`, which is what `redisStreamSource` reads.
 * ioredis takes no abort signal, so the dispatcher's signal only stops an append that
 * has not started.
 * @example createDispatcher({ store: postgresStore({ pool }), deliver: redisStreamDeliverer({ redis }) }).start()
 */
export function redisStreamDeliverer(options: RedisStreamDelivererOptions): (row: OutboxRow, context?: DeliveryContext) => Promise<void> {
  assertKnownOptions('redisStreamDeliverer', options, DELIVERER_OPTIONS)
  const {
    redis,
    stream = (row) => row.topic,
    maxLen,
  } = options
  if (redis === null || typeof redis !== 'object' || typeof redis.call !== 'function') {
    throw new InvalidOptionError('redisStreamDeliverer: option "redis" must be an ioredis client')
  }
  if (maxLen !== undefined) assertCount('redisStreamDeliverer: option "maxLen"', maxLen, 1, Number.MAX_SAFE_INTEGER)
  const trim = maxLen === undefined ? [] : ['MAXLEN', '~', maxLen]
  return async (row, context) => {
    context?.signal.throwIfAborted()
    await redis.call('XADD', stream(row), ...trim, '*', 'id', row.dedupeKey, 'body', JSON.stringify(row.payload))
  }
}
