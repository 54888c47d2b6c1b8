import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { afterAll, describe, expect, it } from 'vitest'
import { createInbox, startConsumer } from '../../src/queue/index.js'
import { natsDeliverer, natsSource } from '../../src/queue/nats/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { publishRawIds } from '../support/nats-raw.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { chaosScenario, delivererScenario, eventually, poisonScenario, reach, seedScenario, unique, type BrokerHarness } from './support.js'

const URL = process.env.IDEM_TEST_NATS_URL ?? 'nats://127.0.0.1:4222'
const open = () => connect({ servers: URL, timeout: 3_000, reconnect: false })
const admin = await reach('NATS JetStream', URL, async () => {
  const nc = await open()
  return { nc, jsm: await jetstreamManager(nc) }
})
const db = admin ? await testSchema('idem_q_nats') : undefined
const streams: string[] = []

afterAll(async () => {
  await db?.drop()
  if (admin) {
    for (const stream of streams) await admin.jsm.streams.delete(stream).catch(() => {})
    await admin.nc.close()
  }
})

const ms = (millis: number) => millis * 1_000_000

async function harness(jsm: JetStreamManager): Promise<BrokerHarness> {
  const stream = unique('IDEM_TEST').toUpperCase()
  const subject = `${stream.toLowerCase()}.claims`
  streams.push(stream)
  await jsm.streams.add({ name: stream, subjects: [subject], duplicate_window: ms(60_000) })
  // A short ack wait: an unacknowledged message (a crashed worker) comes back after 1 s.
  await jsm.consumers.add(stream, { durable_name: 'workers', ack_policy: AckPolicy.Explicit, ack_wait: ms(1_000) })
  const js = jetstream(admin!.nc)
  return {
    copiesOfRepeat: 1,
    async publish(id, body) {
      await js.publish(subject, new TextEncoder().encode(JSON.stringify(body)), { msgID: id })
    },
    async open() {
      const nc: NatsConnection = await open()
      const consumer = await jetstream(nc).consumers.get(stream, 'workers')
      const close = async () => {
        if (!nc.isClosed()) await nc.close()
      }
      return { source: natsSource({ consumer, name: stream, concurrency: 10 }), crash: close, close }
    },
    deliverer: () => natsDeliverer({ js, subject: () => subject }),
    // JetStream has no dead-letter queue: term() stops redelivery; idem's table keeps the letter.
    brokerDeadLetters: async () => undefined,
    async outstanding() {
      const info = await jsm.consumers.info(stream, 'workers')
      return info.num_pending + info.num_ack_pending
    },
  }
}

describe.skipIf(db === undefined)('NATS JetStream adapter (@nats-io/jetstream, real server)', () => {
  const schemaDb = db as TestSchema
  it('seed scenario: commit, crash before ack, redelivery after ack_wait → 58 chunk rows and one email', async () => {
    await postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }).migrate()
    await seedScenario(await harness(admin!.jsm), schemaDb)
  })

  it('a poison message is dead-lettered after 3 attempts (table; TERM at the broker); the consumer goes on', async () => {
    await poisonScenario(await harness(admin!.jsm), schemaDb)
  })

  // JetStream drops the repeated publishes itself (same Nats-Msg-Id within its duplicate
  // window); the inbox still meets the redeliveries that crashes cause.
  it('10,000 messages, 20% published twice, workers crashing mid-transaction and before acks: each applied exactly once, none lost', async () => {
    await chaosScenario(await harness(admin!.jsm), schemaDb)
  }, 240_000)

  it('the outbox deliverer sets Nats-Msg-Id to the dedupe key: JetStream drops the repeat, the inbox would too', async () => {
    const broker = await harness(admin!.jsm)
    await delivererScenario(broker, schemaDb)
    const info = await admin!.jsm.streams.info(streams[streams.length - 1]!)
    expect(info.state.messages).toBe(1)
  })

  it('nak with a delay redelivers the message with the delivery count raised', async () => {
    const broker = await harness(admin!.jsm)
    await broker.publish('delayed-1', { n: 1 })
    const connection = await broker.open()
    const seen: { count: number | undefined }[] = []
    const subscription = await connection.source.subscribe(async (delivery) => {
      seen.push({ count: delivery.deliveryCount })
      if (seen.length === 1) await delivery.nack(300)
      else await delivery.ack()
    })
    await eventually(() => seen.length === 2, 10_000, 'the redelivery')
    await subscription.close()
    await connection.close()
    expect(seen.map((s) => s.count)).toEqual([1, 2])
  })

  /** Makes the stream and its durable consumer, and consumes through `inbox` until `count` messages are settled. */
  async function consumeAll(stream: string, inbox: ReturnType<typeof createInbox<PgClient>>, count: number) {
    const nc = await open()
    const settled: Array<{ status: string; id: string | undefined }> = []
    try {
      const source = natsSource({ consumer: await jetstream(nc).consumers.get(stream, 'workers'), name: stream, concurrency: 1 })
      const consumer = await startConsumer({ inbox, source, handler: () => undefined, onSettled: (result, delivery) => settled.push({ status: result.status, id: delivery.id }) })
      try {
        await eventually(() => settled.length >= count, 15_000, `${count} messages settled`)
      } finally {
        await consumer.stop()
      }
    } finally {
      await nc.close()
    }
    return settled
  }

  async function addStream(stream: string, subject: string) {
    await admin!.jsm.streams.add({ name: stream, subjects: [subject] })
    await admin!.jsm.consumers.add(stream, { durable_name: 'workers', ack_policy: AckPolicy.Explicit, ack_wait: ms(1_000) })
  }

  it('a stream deleted and created again starts at sequence 1 again; its messages are new messages, not duplicates', async () => {
    await postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }).migrate()
    const inbox = createInbox<PgClient>({ store: postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }), consumer: unique('recreated') })
    const stream = unique('IDEM_RECREATED').toUpperCase()
    const subject = `${stream.toLowerCase()}.events`
    streams.push(stream)
    const js = jetstream(admin!.nc)
    const round = async (label: string) => {
      await addStream(stream, subject)
      // No Nats-Msg-Id: the id is the fallback, on sequences 1, 2, 3 both times.
      for (const n of [1, 2, 3]) await js.publish(subject, new TextEncoder().encode(JSON.stringify({ label, n })))
      const settled = await consumeAll(stream, inbox, 3)
      await admin!.jsm.streams.delete(stream)
      return settled
    }
    const before = await round('before')
    const after = await round('after')
    expect(before.map((s) => s.status)).toEqual(['processed', 'processed', 'processed'])
    // On 4ef1791: ['duplicate', 'duplicate', 'duplicate'], the ids <stream>:1… of the first stream.
    expect(after.map((s) => s.status)).toEqual(['processed', 'processed', 'processed'])
    expect(after.map((s) => s.id!.split('@')[0])).toEqual([1, 2, 3].map((seq) => `${stream}:${seq}`))
  }, 60_000)

  it('Nats-Msg-Id headers that are not UTF-8 (0xff01, 0xfe01), which the client reads as one "\\uFFFD\\u0001", are two messages: each is processed', async () => {
    await postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }).migrate()
    const inbox = createInbox<PgClient>({ store: postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }), consumer: unique('binary') })
    const stream = unique('IDEM_BINARY').toUpperCase()
    const subject = `${stream.toLowerCase()}.events`
    streams.push(stream)
    await addStream(stream, subject)
    // The JavaScript client only sends text headers: these go out as raw protocol, as a Go or C producer's would.
    await publishRawIds(URL, subject, [[0xff, 0x01], [0xfe, 0x01]].map((id) => Buffer.from(id)))
    expect((await admin!.jsm.streams.info(stream)).state.messages).toBe(2)
    const settled = await consumeAll(stream, inbox, 2)
    // On 4ef1791 the second was settled duplicate (both ids read as "\\uFFFD\\u0001") and acknowledged unprocessed.
    expect(settled.map((s) => s.status)).toEqual(['processed', 'processed'])
    expect(settled[0]!.id).not.toBe(settled[1]!.id)
  }, 60_000)
})
