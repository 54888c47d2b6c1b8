// An inbox consumer on Redis Streams (idem/queue/redis-streams, ioredis as the runtime
// loads it) whose inbox is idem/redis: a message a producer sent twice (two entries, one
// id) and another one. The handler's count, staged in the message's slot, commits with
// the id; the duplicate entry is settled without running it, and every entry is acked.
import { Redis } from 'ioredis'
import { createInbox, startConsumer, type Delivery } from 'idem/queue'
import { redisStreamSource } from 'idem/queue/redis-streams'
import { redisStore, type RedisTx } from 'idem/redis'
import { STREAM_MESSAGES, streamEffectKey, type StreamsResult } from './results.js'
import { reportResult, required, scriptConfig } from './script.js'

await reportResult(async (): Promise<StreamsResult> => {
  const config = scriptConfig()
  const prefix = required(config, 'prefix')
  const redis = new Redis(required(config, 'redisUrl'), { maxRetriesPerRequest: 1 })
  const stream = `${prefix}orders`
  const entries = new Map<string, { id: string; entryId: string; statuses: string[] }>()
  for (const id of STREAM_MESSAGES) {
    const entryId = (await redis.xadd(stream, '*', 'id', id, 'body', JSON.stringify({ order: id, amount: 1500 })))!
    entries.set(entryId, { id, entryId, statuses: [] })
  }
  const inbox = createInbox<RedisTx, { order: string }>({ store: redisStore({ client: redis, prefix }), consumer: 'orders-intake' })
  // Settled for good once every entry was processed or found a duplicate (and so acked).
  let settle = () => {}
  const allSettled = new Promise<void>((resolve) => (settle = resolve))
  const onSettled = (result: { status: string }, delivery: Delivery) => {
    const entry = entries.get(delivery.headers['stream-id']!)
    entry?.statuses.push(result.status)
    const done = (statuses: string[]) => ['processed', 'duplicate'].includes(statuses[statuses.length - 1] ?? '')
    if ([...entries.values()].every((each) => done(each.statuses))) settle()
  }
  const consumer = await startConsumer<RedisTx, { order: string }>({
    inbox,
    // An entry answered in-flight (its twin still running) is nacked: idle at once, taken over on the next pass.
    source: redisStreamSource({ redis, stream, group: 'intake', consumer: 'runtime-1', blockMs: 100, claimIdleMs: 200, claimEveryMs: 100 }),
    handler: (tx) => tx.call('INCR', tx.key(`${prefix}effect:`)),
    retry: { baseMs: 10, maxMs: 100 },
    onSettled,
  })
  await allSettled
  await consumer.stop()
  const effects: Record<string, number> = {}
  for (const id of new Set(STREAM_MESSAGES)) effects[id] = Number(await redis.get(streamEffectKey(prefix, id)))
  const pending = Number(((await redis.xpending(stream, 'intake')) as [number])[0])
  redis.disconnect()
  return { entries: [...entries.values()], effects, pending }
})
