// The Kafka adapter's offset bookkeeping and wiring, against a fake client that hands
// batches over by hand: which offset is committed when, what a rebalance heard mid-batch
// does, how records and rows are converted, and where each library takes the adapter's
// settings (the fake refuses, as Confluent's client does, what that library does not
// take). (Against a broker, with the inbox and Postgres: test/queue/kafka.test.ts.)
import { describe, expect, it, vi } from 'vitest'
import { InvalidOptionError } from '../../core/errors/invalid-option.js'
import type { OutboxRow } from '../dispatcher.js'
import type { Delivery } from '../source.js'
import { kafkaDeliverer, kafkaSource, type KafkaBatchPayload, type KafkaClient, type KafkaLibrary, type KafkaOutgoing, type KafkaRecord } from './index.js'

interface Sent {
  topic: string
  messages: KafkaOutgoing[]
  acks?: number
}

/**
 * A fake client of `library`. As Confluent's client (1.10.1) does, the 'confluent' one
 * throws on a KafkaJS setting outside the `kafkaJS` block, on `fromBeginning` at
 * `subscribe`, `autoCommit` at `run` and `acks` at `send`, and on `stop()`.
 */
function fakeKafka(library: KafkaLibrary = 'kafkajs') {
  const calls: string[] = []
  const sent: Sent[] = []
  const producerConfigs: unknown[] = []
  const consumerConfigs: unknown[] = []
  let eachBatch: ((payload: KafkaBatchPayload) => Promise<void>) | undefined
  const confluent = library === 'confluent'
  const refuse = (what: string) => {
    throw new Error(`Confluent's client does not take ${what}`)
  }
  const kafka: KafkaClient = {
    consumer(config) {
      if (confluent && 'groupId' in config) refuse('groupId outside the kafkaJS block')
      consumerConfigs.push(config)
      return {
        connect: async () => void calls.push('consumer.connect'),
        disconnect: async () => void calls.push('consumer.disconnect'),
        stop: async () => (confluent ? refuse('stop()') : void calls.push('consumer.stop')),
        subscribe: async (s) => {
          if (confluent && 'fromBeginning' in s) refuse('fromBeginning at subscribe')
          calls.push(`subscribe ${s.topics.join(',')} fromBeginning=${s.fromBeginning}`)
        },
        run: async (config) => {
          if (confluent && 'autoCommit' in config) refuse('autoCommit at run')
          calls.push(`run autoCommit=${config.autoCommit} eachBatchAutoResolve=${config.eachBatchAutoResolve}`)
          eachBatch = config.eachBatch
        },
      }
    },
    producer(config) {
      if (confluent && config !== undefined && 'idempotent' in config) refuse('idempotent outside the kafkaJS block')
      producerConfigs.push(config)
      return {
        connect: async () => void calls.push('producer.connect'),
        disconnect: async () => void calls.push('producer.disconnect'),
        send: async (record) => {
          if (confluent && 'acks' in record) refuse('acks at send')
          sent.push(record)
        },
      }
    },
  }
  return { kafka, calls, sent, producerConfigs, consumerConfigs, batch: () => eachBatch! }
}

const record = (offset: number, extra: Partial<KafkaRecord> = {}): KafkaRecord => ({
  offset: String(offset),
  key: Buffer.from(`key-${offset}`),
  value: Buffer.from(JSON.stringify({ n: offset })),
  timestamp: '1700000000000',
  ...extra,
})

/** A batch payload that records what the adapter commits, resolves and heartbeats. */
function payload(topic: string, partition: number, messages: KafkaRecord[], heartbeat: () => Promise<void> = async () => {}) {
  const commits: string[] = []
  const resolved: string[] = []
  const run: KafkaBatchPayload = {
    batch: { topic, partition, messages },
    resolveOffset: (offset) => void resolved.push(offset),
    heartbeat,
    commitOffsetsIfNecessary: async (offsets) => {
      for (const t of offsets!.topics) for (const p of t.partitions) commits.push(`${t.topic}/${p.partition}@${p.offset}`)
    },
    isRunning: () => true,
    isStale: () => false,
  }
  return { run, commits, resolved }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`never: ${what}`)
}

describe('kafkaSource', () => {
  it('commits per partition only past the run of settled records, however they finish', async () => {
    const fake = fakeKafka()
    const source = kafkaSource({ kafka: fake.kafka, groupId: 'g', topics: ['claims'], concurrency: 5, commitIntervalMs: 0, deadLetterTopic: null })
    const held: Delivery[] = []
    await source.subscribe(async (delivery) => void held.push(delivery))
    expect(fake.calls).toEqual(['consumer.connect', 'subscribe claims fromBeginning=true', 'run autoCommit=false eachBatchAutoResolve=false'])
    const { run, commits } = payload('claims', 3, [record(10), record(11), record(12), record(13), record(14)])
    const batch = fake.batch()(run)
    await until(() => held.length === 5, 'all five handed over')
    // Records 11–13 done, 10 not yet: nothing may be committed.
    for (const i of [1, 2, 3]) await held[i]!.ack()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(commits).toEqual([])
    await held[0]!.ack()
    await until(() => commits.length === 1, 'a commit')
    expect(commits).toEqual(['claims/3@14'])
    // 14 is nacked: handed over again in this process, with its count raised.
    await held[4]!.nack(0)
    await until(() => held.length === 6, 'the redelivery')
    expect(held[5]).toMatchObject({ id: 'claims-3-14@1700000000000', deliveryCount: 2, redelivered: true })
    expect(held[4]).toMatchObject({ id: 'claims-3-14@1700000000000', deliveryCount: 1, redelivered: false })
    await held[5]!.ack()
    await batch
    expect(commits).toEqual(['claims/3@14', 'claims/3@15'])
  })

  it('a rebalance heard mid-batch: nothing more is handed over, the records in hand finish, their run is committed, and the batch ends with the coordinator\'s error', async () => {
    const fake = fakeKafka()
    const source = kafkaSource({ kafka: fake.kafka, groupId: 'g', topics: ['claims'], consumerConfig: { heartbeatInterval: 100 }, deadLetterTopic: null })
    let rebalancing = false
    let heartbeats = 0
    const rebalance = Object.assign(new Error('The group is rebalancing, so a rejoin is needed'), { type: 'REBALANCE_IN_PROGRESS' })
    const seen: string[] = []
    await source.subscribe(async (delivery) => {
      seen.push(delivery.id!)
      // The second record is still being handled when the coordinator starts the rebalance.
      if (seen.length === 2) {
        rebalancing = true
        await until(() => heartbeats > 0, 'a heartbeat during the rebalance')
      }
      await delivery.ack()
    })
    const { run, commits } = payload('claims', 0, [record(0), record(1), record(2), record(3)], async () => {
      if (!rebalancing) return
      heartbeats++
      throw rebalance
    })
    await expect(fake.batch()(run)).rejects.toBe(rebalance)
    expect(seen).toEqual(['claims-0-0@1700000000000', 'claims-0-1@1700000000000'])
    expect(commits).toEqual(['claims/0@2'])
  })

  it('an unsettled record is held (its offset uncommitted) until close, which commits the run before it', async () => {
    const fake = fakeKafka()
    const source = kafkaSource({ kafka: fake.kafka, groupId: 'g', topics: ['claims'], deadLetterTopic: null })
    let handed = 0
    const subscription = await source.subscribe(async (delivery) => {
      if (++handed === 1) await delivery.ack()
    })
    const { run, commits } = payload('claims', 0, [record(0), record(1), record(2)])
    const batch = fake.batch()(run)
    await until(() => handed === 2, 'the second handed over')
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(handed).toBe(2)
    await subscription.close()
    await batch
    expect(commits).toEqual(['claims/0@1'])
    expect(fake.calls.slice(-2)).toEqual(['consumer.stop', 'consumer.disconnect'])
  })

  it('the id is the idem-id header when set (its bytes in hex when they are not UTF-8), else topic-partition-offset@timestamp; headers arrive as text', async () => {
    const fake = fakeKafka()
    const source = kafkaSource({ kafka: fake.kafka, groupId: 'g', topics: ['claims'], deadLetterTopic: null })
    const seen: Delivery[] = []
    await source.subscribe(async (delivery) => {
      seen.push(delivery)
      await delivery.ack()
    })
    const headers = { 'idem-id': Buffer.from('claim-7'), trace: ['a', Buffer.from('b')], empty: undefined }
    const binary = { 'idem-id': Buffer.from([0xff, 0x01]) }
    const { run } = payload('claims', 2, [record(5, { headers }), record(6, { key: null, value: null }), record(7, { headers: binary })])
    await fake.batch()(run)
    expect(seen.map((d) => d.id)).toEqual(['claim-7', 'claims-2-6@1700000000000', 'hex:ff01'])
    expect(seen[0]!.headers).toEqual({ 'idem-id': 'claim-7', trace: 'b', 'kafka-topic': 'claims', 'kafka-partition': '2', 'kafka-offset': '5', 'kafka-timestamp': '1700000000000', 'kafka-key': 'key-5' })
    expect(Buffer.from(seen[0]!.data).toString('utf8')).toBe('{"n":5}')
    expect(seen[1]!.data).toHaveLength(0)
    expect(seen[1]!.headers['kafka-key']).toBeUndefined()
  })

  it('a dead letter is produced to <topic>.dead with the error, its origin and the inbox id, by an idempotent producer, before the offset moves', async () => {
    const fake = fakeKafka()
    const source = kafkaSource({ kafka: fake.kafka, groupId: 'g', topics: ['claims'] })
    expect(fake.producerConfigs).toEqual([{ idempotent: true, maxInFlightRequests: 1 }])
    await source.subscribe((delivery) => delivery.deadLetter('cannot parse claim form'))
    expect(fake.calls[0]).toBe('producer.connect')
    const { run, commits } = payload('claims', 1, [record(9, { headers: { trace: 'x' } })])
    await fake.batch()(run)
    expect(fake.sent).toEqual([
      {
        topic: 'claims.dead',
        acks: -1,
        messages: [{ key: Buffer.from('key-9'), value: Buffer.from('{"n":9}'), headers: { trace: 'x', 'idem-error': 'cannot parse claim form', 'idem-source': 'claims-1-9', 'idem-id': 'claims-1-9@1700000000000' } }],
      },
    ])
    expect(commits).toEqual(['claims/1@10'])
  })

  it('refuses bad options at creation, naming them', () => {
    const { kafka } = fakeKafka()
    const bad: [object, RegExp][] = [
      [{ groupId: 'g', topics: ['t'] }, /option "kafka" must be a Kafka client/],
      [{ kafka, library: 'rdkafka', groupId: 'g', topics: ['t'] }, /option "library" must be 'kafkajs' or 'confluent', got "rdkafka"/],
      [{ kafka, topics: ['t'] }, /option "groupId"/],
      [{ kafka, groupId: 'g', topics: [] }, /option "topics" must be a non-empty array/],
      [{ kafka, groupId: 'g', topics: ['no spaces'] }, /option "topics"\[0\] must be a Kafka topic name/],
      [{ kafka, groupId: 'g', topics: ['t'], concurrency: 0 }, /option "concurrency"/],
      [{ kafka, groupId: 'g', topics: ['t'], deadLetterTopic: 'a/b' }, /option "deadLetterTopic"/],
      [{ kafka, groupId: 'g', topics: ['t'], maxNackDelayMs: -1 }, /option "maxNackDelayMs"/],
      [{ kafka, groupId: 'g', topics: ['t'], consumerConfig: { groupId: 'other' } }, /must not set groupId/],
      [{ kafka, groupId: 'g', topics: ['t'], groupID: 'g' }, /"groupID" is not an option; did you mean "groupId"\?/],
    ]
    for (const [options, message] of bad) {
      expect(() => kafkaSource(options as never)).toThrow(InvalidOptionError)
      expect(() => kafkaSource(options as never)).toThrow(message)
    }
  })
})

describe('kafkaDeliverer', () => {
  const row: OutboxRow = { id: '1', topic: 'emails', payload: { to: 'a@example.com' }, dedupeKey: 'claim-received:42', attempt: 1, lastError: null, createdAt: new Date() }

  it('makes an idempotent producer, connects once, and produces each row keyed, with the dedupe key as the idem-id header, acknowledged by all replicas', async () => {
    const fake = fakeKafka()
    const deliver = kafkaDeliverer({ kafka: fake.kafka })
    expect(fake.producerConfigs).toEqual([{ idempotent: true, maxInFlightRequests: 1 }])
    await deliver(row)
    await deliver({ ...row, attempt: 2 })
    expect(fake.calls).toEqual(['producer.connect'])
    const expected = { topic: 'emails', acks: -1, messages: [{ key: 'claim-received:42', value: '{"to":"a@example.com"}', headers: { 'idem-id': 'claim-received:42' } }] }
    expect(fake.sent).toEqual([expected, expected])
    await deliver.close()
    expect(fake.calls).toEqual(['producer.connect', 'producer.disconnect'])
  })

  it('takes the topic and key from the row by the functions given; idempotence can only be turned off explicitly', async () => {
    const fake = fakeKafka()
    const deliver = kafkaDeliverer({ kafka: fake.kafka, topic: (r) => `out.${r.topic}`, key: () => 'claim-42', idempotent: false, producerConfig: { retry: { retries: 2 } } })
    expect(fake.producerConfigs).toEqual([{ retry: { retries: 2 }, idempotent: false }])
    await deliver(row)
    expect(fake.sent[0]).toMatchObject({ topic: 'out.emails', messages: [{ key: 'claim-42' }] })
    expect(() => kafkaDeliverer({ kafka: fake.kafka, idempotnt: false } as never)).toThrow(/"idempotnt" is not an option; did you mean "idempotent"\?/)
    expect(() => kafkaDeliverer({ kafka: fake.kafka, key: 'claimId' } as never)).toThrow(/option "key" must be a function/)
  })
})

describe("on Confluent's client (library: 'confluent')", () => {
  const row: OutboxRow = { id: '1', topic: 'emails', payload: { to: 'a@example.com' }, dedupeKey: 'claim-received:42', attempt: 1, lastError: null, createdAt: new Date() }

  it('the group, its start and manual commits go in the consumer\'s kafkaJS block, beside the librdkafka settings; close disconnects, which waits for the batch, and never calls stop()', async () => {
    const fake = fakeKafka('confluent')
    const consumerConfig = { 'js.consumer.max.batch.size': 8, kafkaJS: { sessionTimeout: 6_000 } }
    const source = kafkaSource({ kafka: fake.kafka, library: 'confluent', groupId: 'g', topics: ['claims'], fromBeginning: false, deadLetterTopic: null, consumerConfig })
    expect(fake.consumerConfigs).toEqual([{ 'js.consumer.max.batch.size': 8, kafkaJS: { sessionTimeout: 6_000, groupId: 'g', fromBeginning: false, autoCommit: false } }])
    let handed = 0
    const subscription = await source.subscribe(async (delivery) => {
      if (++handed === 1) await delivery.ack()
    })
    expect(fake.calls).toEqual(['consumer.connect', 'subscribe claims fromBeginning=undefined', 'run autoCommit=undefined eachBatchAutoResolve=false'])
    const { run, commits, resolved } = payload('claims', 0, [record(0), record(1)])
    const batch = fake.batch()(run)
    await until(() => handed === 2, 'the second handed over')
    await subscription.close()
    await batch
    expect(resolved).toEqual(['0'])
    expect(commits).toEqual(['claims/0@1'])
    expect(fake.calls.slice(-1)).toEqual(['consumer.disconnect'])
  })

  it('a batch does not heartbeat: librdkafka does, from its own thread', async () => {
    // Intervals are faked, so ten seconds of a handler's run pass at once: kafkajs's beat
    // (every 1.5 s by its default interval) would have called heartbeat() six times.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    try {
      const fake = fakeKafka('confluent')
      const source = kafkaSource({ kafka: fake.kafka, library: 'confluent', groupId: 'g', topics: ['claims'], deadLetterTopic: null })
      let heartbeats = 0
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      let handed = false
      await source.subscribe(async (delivery) => {
        handed = true
        await released
        await delivery.ack()
      })
      const { run, commits } = payload('claims', 0, [record(0)], async () => void heartbeats++)
      const batch = fake.batch()(run)
      await until(() => handed, 'the record handed over')
      vi.advanceTimersByTime(10_000)
      release()
      await batch
      expect(commits).toEqual(['claims/0@1'])
      expect(heartbeats).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })

  it('the producers (dead letters, deliverer) are idempotent with acks -1 in their kafkaJS block, and send takes no acks', async () => {
    const fake = fakeKafka('confluent')
    const source = kafkaSource({ kafka: fake.kafka, library: 'confluent', groupId: 'g', topics: ['claims'], producerConfig: { 'linger.ms': 0 } })
    await source.subscribe((delivery) => delivery.deadLetter('cannot parse claim form'))
    const { run, commits } = payload('claims', 1, [record(9)])
    await fake.batch()(run)
    expect(commits).toEqual(['claims/1@10'])
    const deliver = kafkaDeliverer({ kafka: fake.kafka, library: 'confluent' })
    await deliver(row)
    const plain = kafkaDeliverer({ kafka: fake.kafka, library: 'confluent', idempotent: false })
    expect(fake.producerConfigs).toEqual([
      { 'linger.ms': 0, kafkaJS: { idempotent: true, acks: -1 } },
      { kafkaJS: { idempotent: true, acks: -1 } },
      { kafkaJS: { idempotent: false, acks: -1 } },
    ])
    expect(fake.sent.map((sent) => sent.topic)).toEqual(['claims.dead', 'emails'])
    expect(fake.sent[1]).toEqual({ topic: 'emails', messages: [{ key: 'claim-received:42', value: '{"to":"a@example.com"}', headers: { 'idem-id': 'claim-received:42' } }] })
    await deliver.close()
    await plain.close()
  })

  it('refuses client settings that would undo the adapter\'s group, start, commits or acks', () => {
    const { kafka } = fakeKafka('confluent')
    const base = { kafka, library: 'confluent' as const, groupId: 'g', topics: ['t'] }
    const bad: [object, RegExp][] = [
      [{ ...base, consumerConfig: { kafkaJS: { groupId: 'other' } } }, /option "consumerConfig" must not set groupId/],
      [{ ...base, consumerConfig: { 'group.id': 'other' } }, /must not set group\.id/],
      [{ ...base, consumerConfig: { kafkaJS: { autoCommit: true } } }, /must not set autoCommit/],
      [{ ...base, consumerConfig: { 'enable.auto.commit': true } }, /must not set enable\.auto\.commit/],
      [{ ...base, consumerConfig: { kafkaJS: { fromBeginning: false } } }, /must not set fromBeginning; the adapter sets it/],
      [{ ...base, consumerConfig: { kafkaJS: 'yes' } }, /option "consumerConfig"\.kafkaJS must be an object/],
      [{ ...base, producerConfig: { kafkaJS: { acks: 1 } } }, /option "producerConfig" must not set acks/],
    ]
    for (const [options, message] of bad) {
      expect(() => kafkaSource(options as never)).toThrow(InvalidOptionError)
      expect(() => kafkaSource(options as never)).toThrow(message)
    }
    expect(() => kafkaDeliverer({ kafka, library: 'confluent', producerConfig: { acks: 0 } })).toThrow(/option "producerConfig" must not set acks/)
  })
})
