import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { redisStreamDeliverer, redisStreamSource } from '../../src/queue/redis-streams/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { chaosScenario, delivererScenario, eventually, poisonScenario, reachRedis, REDIS_URL, seedScenario, unique, type BrokerHarness } from './support.js'

const admin = await reachRedis()
const db = admin ? await testSchema('idem_q_redis') : undefined
const streams: string[] = []

afterAll(async () => {
  await db?.drop()
  if (admin) {
    if (streams.length > 0) await admin.del(...streams)
    admin.disconnect()
  }
})

function harness(): BrokerHarness {
  const stream = unique('idem:test')
  const group = 'workers'
  streams.push(stream, `${stream}:dead`)
  let consumers = 0
  return {
    copiesOfRepeat: 2,
    async publish(id, body) {
      await admin!.xadd(stream, '*', 'id', id, 'body', JSON.stringify(body))
    },
    async open() {
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
      // Each worker is a new consumer in the group, as a restarted process would be; a
      // short claimIdleMs lets it take over what a dead one held.
      const source = redisStreamSource({ redis, stream, group, consumer: `worker-${++consumers}`, blockMs: 100, claimIdleMs: 300, claimEveryMs: 100 })
      let closed = false
      const close = async () => {
        if (closed) return
        closed = true
        redis.disconnect()
      }
      return { source, crash: close, close }
    },
    deliverer: () => redisStreamDeliverer({ redis: admin!, stream: () => stream }),
    async brokerDeadLetters() {
      return admin!.xlen(`${stream}:dead`)
    },
    async outstanding() {
      const summary = (await admin!.xpending(stream, group)) as [number, ...unknown[]]
      return Number(summary[0])
    },
  }
}

describe.skipIf(db === undefined)('Redis Streams adapter (ioredis, real server)', () => {
  const schemaDb = db as TestSchema
  it('seed scenario: commit, crash before XACK, XAUTOCLAIM by the next worker → 58 chunk rows and one email', async () => {
    await postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }).migrate()
    await seedScenario(harness(), schemaDb)
  })

  it('a poison message is dead-lettered after 3 attempts (table and the :dead stream, with its error); the consumer goes on', async () => {
    const broker = harness()
    await poisonScenario(broker, schemaDb)
    const stream = streams[streams.length - 1]!
    const entries = (await admin!.xrange(stream, '-', '+')) as [string, string[]][]
    expect(entries).toHaveLength(1)
    const fields = entries[0]![1]
    expect(fields).toContain('error')
    expect(fields[fields.indexOf('error') + 1]).toContain('cannot parse claim form 0')
  })

  it('10,000 messages, 20% published twice, workers crashing mid-transaction and before acks: each applied exactly once, none lost', async () => {
    await chaosScenario(harness(), schemaDb)
  }, 240_000)

  it('the outbox deliverer writes the dedupe key as the id field; a repeated XADD is consumed once', async () => {
    await delivererScenario(harness(), schemaDb)
  })

  it("maps an entry's fields: id and body from their fields (entry id without one), the rest and stream-id as headers", async () => {
    const stream = unique('idem:test:fields')
    streams.push(stream, `${stream}:dead`)
    const add = async (...fields: string[]) => (await admin!.xadd(stream, '*', ...fields)) as string
    const withId = await add('id', 'evt_1', 'body', '{"n":1}', 'trace', 't-1')
    const withoutId = await add('body', '{"n":2}')
    const custom = await add('msg', 'evt_3', 'payload', '{"n":3}', 'body', 'not the body')
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    const seen: Array<{ id: string | undefined; data: string; headers: Record<string, string> }> = []
    const collect = async (source: ReturnType<typeof redisStreamSource>, expected: number) => {
      const subscription = await source.subscribe(async (delivery) => {
        seen.push({ id: delivery.id, data: new TextDecoder().decode(delivery.data), headers: { ...delivery.headers } })
        await delivery.ack()
      })
      await eventually(() => seen.length >= expected)
      await subscription.close()
    }
    try {
      await collect(redisStreamSource({ redis, stream, group: 'default-fields', consumer: 'c1', blockMs: 100 }), 3)
      // Handled concurrently: compared by entry, not by order.
      const byEntry = () => Object.fromEntries(seen.map((delivery) => [delivery.headers['stream-id'], delivery]))
      expect(byEntry()).toEqual({
        [withId]: { id: 'evt_1', data: '{"n":1}', headers: { id: 'evt_1', trace: 't-1', 'stream-id': withId } },
        [withoutId]: { id: withoutId, data: '{"n":2}', headers: { 'stream-id': withoutId } },
        [custom]: { id: custom, data: 'not the body', headers: { msg: 'evt_3', payload: '{"n":3}', 'stream-id': custom } },
      })
      seen.length = 0
      await collect(redisStreamSource({ redis, stream, group: 'own-fields', consumer: 'c1', blockMs: 100, idField: 'msg', bodyField: 'payload' }), 3)
      expect(byEntry()[custom]).toEqual({ id: 'evt_3', data: '{"n":3}', headers: { msg: 'evt_3', body: 'not the body', 'stream-id': custom } })
    } finally {
      redis.disconnect()
    }
  })

  it('a stuck entry of a dead consumer is taken over with XAUTOCLAIM and its delivery count rises', async () => {
    const broker = harness()
    await broker.publish('stuck-1', { n: 1 })
    const dead = await broker.open()
    const counts: (number | undefined)[] = []
    const deadLoop = await dead.source.subscribe(async (delivery) => void counts.push(delivery.deliveryCount))
    await eventually(() => counts.length === 1, 5_000, 'the first delivery')
    await deadLoop.close()
    await dead.crash()
    const next = await broker.open()
    const nextLoop = await next.source.subscribe(async (delivery) => {
      counts.push(delivery.deliveryCount)
      await delivery.ack()
    })
    await eventually(() => counts.length === 2, 5_000, 'the takeover')
    await nextLoop.close()
    await next.close()
    expect(counts).toEqual([1, 2])
    await eventually(async () => (await broker.outstanding!()) === 0, 5_000, 'the ack')
  })
})
