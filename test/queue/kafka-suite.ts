/**
 * The Kafka adapter against librdkafka's mock cluster (3 brokers, run by kcat), not a real
 * broker: it speaks the Kafka protocol over TCP, keeps consumer groups with session
 * timeouts and rebalances, and serves committed offsets, so a record whose offset was not
 * committed is read again by the next owner of its partition. The same tests run on each
 * library the adapter supports (test/queue/kafka-clients.ts): kafka.test.ts on kafkajs,
 * kafka-confluent.test.ts on Confluent's client. The test's own instruments (the admin
 * client reading offsets, the producer of test records) are kafkajs in both. kafkajs's
 * idempotent producer cannot start on the mock (see docs/queue.md), so its producers run
 * with `idempotent: false`; Confluent's (librdkafka's) runs as by default.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import kafkajs, { type Admin, type Producer } from 'kafkajs'
import { afterAll, describe, expect, it } from 'vitest'
import { createMemo } from '../../src/data/index.js'
import { createInbox, startConsumer, type ConsumeResult, type MessageSource } from '../../src/queue/index.js'
import { kafkaDeliverer, kafkaSource, type KafkaClient, type KafkaDeliverer } from '../../src/queue/kafka/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import type { PgClient } from '../../src/stores/postgres/driver/types.js'
import { startKafkaMock, type KafkaMock } from '../support/kafka-mock.js'
import { patience } from '../support/patience.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { CONFLUENT_DIR, CONSUMER_SETTINGS, type GroupWatch, type KafkaUnderTest, type SourceChoice } from './kafka-clients.js'
import { chaosScenario, delivererScenario, eventually, poisonScenario, reach, seedScenario, unique, type BrokerHarness } from './support.js'

const { Kafka, logLevel, Partitioners } = kafkajs

/**
 * Declares the Kafka tests for `kut` (skipped, with a SKIPPED line outside CI, when the
 * mock cluster, Postgres or the library is missing), on a mock cluster and a schema of
 * their own.
 */
export async function kafkaSuite(kut: KafkaUnderTest | undefined, schemaName: string): Promise<void> {
  const mock = kut && (await reach<KafkaMock>('librdkafka mock cluster (kcat)', 'kcat -X test.mock.num.brokers=3', () => startKafkaMock()))
  const db = mock ? await testSchema(schemaName) : undefined
  // The test's instruments, on kafkajs whatever the library under test.
  const instrument = (brokers: string[]) => new Kafka({ clientId: 'idem-test-instrument', brokers, logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1_000 } })
  const admin: Admin | undefined = mock ? instrument(mock.brokers).admin() : undefined
  const producer: Producer | undefined = mock ? instrument(mock.brokers).producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: false }) : undefined
  if (mock) await Promise.all([admin!.connect(), producer!.connect()])
  const cleanups: (() => Promise<unknown>)[] = []

  afterAll(async () => {
    // A crashed worker's client goes on retrying its refused connections for a while; it is not waited for.
    const bounded = (work: Promise<unknown>) => Promise.race([work, new Promise((resolve) => setTimeout(resolve, 3_000).unref())])
    await Promise.allSettled(cleanups.map((cleanup) => bounded(cleanup())))
    await producer?.disconnect().catch(() => {})
    await admin?.disconnect().catch(() => {})
    await db?.drop()
    await mock?.stop()
  })

  describe.skipIf(db === undefined)(`Kafka adapter on ${kut?.library} (against librdkafka's mock cluster)`, () => {
    const schemaDb = db as TestSchema
    const under = kut as KafkaUnderTest
    const brokers = () => mock!.brokers
    const tools = { admin: () => admin!, producer: () => producer! }
    const client = () => under.client(brokers())
    /** A source on a client of the library under test, with the tests' settings unless given. */
    const sourceOf = (choice: SourceChoice, kafka = client()) =>
      kafkaSource({ idempotent: under.idempotent, consumerConfig: under.consumerConfig, producerConfig: under.producerConfig, ...choice, kafka, library: under.library })
    const uncommittedIn = (topic: string, groupId: string) => uncommitted(tools.admin(), topic, groupId)
    /** The store, migrated, and a ledger table (no unique constraint) of the messages applied and by whom. */
    const ledgerOf = async (table: string) => {
      const { pool, schema } = schemaDb
      const store = postgresStore({ pool, schema })
      await store.migrate()
      const ledger = `"${schema}".${table}`
      await pool.query(`CREATE TABLE ${ledger} (message_id text NOT NULL, by text NOT NULL)`)
      return { pool, store, ledger }
    }

    function harness(): BrokerHarness {
      const topic = unique('idem-test')
      const groupId = unique('workers')
      return {
        copiesOfRepeat: 2,
        async publish(id, body) {
          await tools.producer().send({ topic, messages: [{ key: id, value: JSON.stringify(body), headers: { 'idem-id': id } }] })
        },
        async open() {
          const { source, crash, dispose } = await under.crashableSource(brokers(), {
            groupId,
            topics: [topic],
            idempotent: under.idempotent,
            partitionsConsumedConcurrently: 4,
            consumerConfig: under.consumerConfig,
            producerConfig: under.producerConfig,
          })
          // A crashed worker's client (kafkajs's) keeps failing to reach the brokers until it gives up; end it at the end.
          cleanups.push(dispose)
          return { source, crash: async () => crash(), close: async () => {} }
        },
        deliverer() {
          const deliver: KafkaDeliverer = kafkaDeliverer({ kafka: client(), library: under.library, topic: () => topic, idempotent: under.idempotent, producerConfig: under.producerConfig })
          cleanups.push(() => deliver.close())
          return deliver
        },
        brokerDeadLetters: () => recordsIn(tools.admin(), `${topic}.dead`),
        outstanding: () => uncommittedIn(topic, groupId),
      }
    }

    it('the seed incident: a consumer killed after writing, before its offset commit; after the rebalance the other consumer gets the same records, and each intake has one summary, the first LLM answer', async () => {
      const { pool, schema } = schemaDb
      const store = postgresStore({ pool, schema })
      await store.migrate()
      const summaries = `"${schema}".summaries`
      const llmCalls = `"${schema}".llm_calls`
      await pool.query(`CREATE TABLE ${summaries} (id bigserial PRIMARY KEY, intake_id text NOT NULL, prompt_version text NOT NULL, summary text NOT NULL, UNIQUE (intake_id, prompt_version))`)
      await pool.query(`CREATE TABLE ${llmCalls} (intake_id text NOT NULL, answer text NOT NULL, by text NOT NULL)`)
      const topic = unique('intakes')
      const groupId = unique('summariser')
      const consumerName = unique('summariser')
      const partitions = 4
      // The topic exists before anyone joins (a metadata request makes the mock create it, with
      // its 4 partitions): a group formed around a topic that does not exist yet was seen to
      // settle with every partition on one member and none on the other.
      const created = await tools.admin().fetchTopicMetadata({ topics: [topic] })
      expect(created.topics[0]!.partitions).toHaveLength(partitions)

      // Consumer A: another process, killed with SIGKILL.
      const fixture = fileURLToPath(new URL('../fixtures/kafka-intake-worker.mjs', import.meta.url))
      const fromA = { assignment: undefined as number[] | undefined, wrote: new Map<string, string>(), memoised: new Map<string, string>() }
      let stderr = ''
      const spawnA = () => {
        const settings = { library: under.library, confluentDir: CONFLUENT_DIR, brokers: brokers(), topic, groupId, consumer: consumerName, schema, consumerSettings: CONSUMER_SETTINGS }
        const child = spawn(process.execPath, [fixture, JSON.stringify(settings)], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, KAFKAJS_NO_PARTITIONER_WARNING: '1' },
        })
        cleanups.push(async () => child.kill('SIGKILL'))
        child.stderr.on('data', (chunk) => (stderr += chunk))
        const exited = new Promise<string | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)))
        let lines = ''
        child.stdout.on('data', (chunk) => {
          lines += chunk
          let end: number
          while ((end = lines.indexOf('\n')) >= 0) {
            const event = JSON.parse(lines.slice(0, end))
            lines = lines.slice(end + 1)
            if (event.type === 'assigned') fromA.assignment = event.partitions
            if (event.type === 'wrote') fromA.wrote.set(event.intakeId, event.summary)
            if (event.type === 'memoised') fromA.memoised.set(event.intakeId, event.summary)
          }
        })
        return { child, exited }
      }
      let consumerA = spawnA()

      // Consumer B: this process, the same inbox and handler (less the fixture's stops).
      const inbox = createInbox<PgClient, Intake>({ store, consumer: consumerName })
      const memo = createMemo({ store })
      let watchB: GroupWatch | undefined
      const assignmentOfB = () => watchB?.assignment()
      const settledByB = new Map<string, Status[]>()
      const startB = async () => {
        const watch = under.watch(topic)
        const source = sourceOf({ groupId, topics: [topic], concurrency: 2, partitionsConsumedConcurrently: partitions, consumerConfig: watch.consumerConfig })
        watch.attach(source)
        watchB = watch
        return await startConsumer<PgClient, Intake>({
          inbox,
          source,
          handler: async (tx, message) => {
            const { intakeId, text } = message.body
            const summary = await memo('summarise-intake', { intakeId, text }, async () => {
              const answer = `Summary of ${intakeId} by B: ${text} (${Math.random().toString(36).slice(2)})`
              await pool.query(`INSERT INTO ${llmCalls} VALUES ($1, $2, 'B')`, [intakeId, answer])
              return answer
            }, { version: PROMPT_VERSION })
            await tx.query(`INSERT INTO ${summaries} (intake_id, prompt_version, summary) VALUES ($1, $2, $3)`, [intakeId, PROMPT_VERSION, summary])
          },
          onSettled: (result, delivery) => {
            const intakeId = JSON.parse(Buffer.from(delivery.data).toString('utf8')).intakeId as string
            settledByB.set(intakeId, [...(settledByB.get(intakeId) ?? []), result.status])
          },
        })
      }
      let consumerB = await startB()
      cleanups.push(() => consumerB.stop())
      // Nothing is produced yet, so members leaving and joining again change nothing but the
      // assignment. The remedy for a group that settled unevenly: B leaves, so A, alone, takes
      // every partition; if A does not say so, it is stopped (SIGTERM: it leaves the group) and
      // started again, alone in the group, as at the start; then B joins again. (An A started
      // while B held the group was seen to join and never get going, remedy after remedy.)
      const aloneA = () => (fromA.assignment ?? []).length === partitions
      const rejoin = async () => {
        await consumerB.stop()
        watchB = undefined
        const took = await holdsWithin(aloneA, 15_000)
        if (!took) {
          consumerA.child.kill('SIGTERM')
          const gone = setTimeout(() => consumerA.child.kill('SIGKILL'), 5_000)
          await consumerA.exited
          clearTimeout(gone)
          fromA.assignment = undefined
          consumerA = spawnA()
          await holdsWithin(aloneA, 30_000)
        }
        consumerB = await startB()
      }
      await balanced([() => fromA.assignment, assignmentOfB], partitions, rejoin)

      // Three intakes per partition, each partition's in one record batch.
      const intakes: Intake[] = []
      for (let partition = 0; partition < partitions; partition++) {
        for (let n = 1; n <= 3; n++) intakes.push({ intakeId: `intake-${partition}-${n}`, text: `patient ${partition}.${n}: chest pain since Monday`, partition })
      }
      await tools.producer().send({ topic, messages: intakes.map((intake) => ({ key: intake.intakeId, value: JSON.stringify(intake), partition: intake.partition })) })

      // A takes the first intake of each of its partitions through the whole handler and the
      // inbox's commit, and stops before the offset commit; it gets the second's LLM answer
      // memoised and stops before writing. Then it is killed.
      const ofA = intakes.filter((intake) => fromA.assignment!.includes(intake.partition))
      const firstOfA = ofA.filter((intake) => intake.intakeId.endsWith('-1')).map((intake) => intake.intakeId)
      const secondOfA = ofA.filter((intake) => intake.intakeId.endsWith('-2')).map((intake) => intake.intakeId)
      const heldAtProduce = { A: fromA.assignment, B: assignmentOfB() }
      await eventually(() => firstOfA.every((id) => fromA.wrote.has(id)) && secondOfA.every((id) => fromA.memoised.has(id)), 20_000, 'consumer A to write and memoise').catch((error: Error) => {
        // Which of the two moved: an assignment changed after the group was seen balanced, or A stalled on its own partitions.
        const now = { A: fromA.assignment, B: assignmentOfB(), wrote: [...fromA.wrote.keys()], memoised: [...fromA.memoised.keys()], settledByB: [...settledByB.keys()] }
        throw new Error(`${error.message}; held when produced ${JSON.stringify(heldAtProduce)}, now ${JSON.stringify(now)}; A's stderr: ${stderr.slice(0, 2_000)}`)
      })
      const committedByA = (await pool.query(`SELECT intake_id, summary FROM ${summaries} WHERE intake_id = ANY($1)`, [firstOfA])).rows
      expect(committedByA).toHaveLength(firstOfA.length)
      consumerA.child.kill('SIGKILL')
      expect(await consumerA.exited).toBe('SIGKILL')

      // The group notices A is gone (its session expires), rebalances, and B reads A's partitions from their last commit: none.
      await eventually(() => intakes.every((intake) => (settledByB.get(intake.intakeId) ?? []).some((s) => s === 'processed' || s === 'duplicate')), 40_000, 'B to settle every intake')
      await eventually(async () => (await uncommittedIn(topic, groupId)) === 0, 10_000, 'every offset committed')
      await consumerB.stop()

      expect(assignmentOfB()).toHaveLength(partitions)
      // A record B handled reaches B again if a later rebalance refused its commit: then it is a duplicate.
      for (const id of firstOfA) expect(new Set(settledByB.get(id))).toEqual(new Set(['duplicate']))
      for (const id of secondOfA) expect(settledByB.get(id)!.filter((s) => s !== 'duplicate' && s !== 'in-flight')).toEqual(['processed'])
      const { rows } = await pool.query(`SELECT intake_id, prompt_version, summary FROM ${summaries} ORDER BY intake_id`)
      expect(rows.map((row) => row.intake_id)).toEqual(intakes.map((intake) => intake.intakeId).sort())
      const calls = (await pool.query(`SELECT intake_id, answer, by FROM ${llmCalls}`)).rows
      // One LLM call per intake, and its answer is the summary, byte for byte.
      expect(calls).toHaveLength(intakes.length)
      for (const row of rows) {
        expect(row.prompt_version).toBe(PROMPT_VERSION)
        const call = calls.find((c) => c.intake_id === row.intake_id)!
        expect(Buffer.from(row.summary, 'utf8').equals(Buffer.from(call.answer, 'utf8'))).toBe(true)
      }
      for (const id of firstOfA) expect(rows.find((row) => row.intake_id === id)!.summary).toBe(fromA.wrote.get(id))
      // A's memoised answer, not a second one, is what B wrote for the intake A never finished.
      for (const id of secondOfA) {
        expect(rows.find((row) => row.intake_id === id)!.summary).toBe(fromA.memoised.get(id))
        expect(calls.find((c) => c.intake_id === id)!.by).toBe('A')
      }
      expect(stderr).toBe('')
    }, patience(300_000))

    it('a rebalance mid-batch: a member joins while the first is half way through its batches; each record is applied once, none is lost', async () => {
      const { pool, store, ledger } = await ledgerOf('rebalance_ledger')
      const topic = unique('rebalance')
      const groupId = unique('ledger')
      const inbox = createInbox<PgClient, { n: number }>({ store, consumer: unique('ledger') })
      const total = 400
      const head = 20
      const handledBy = { A: 0, B: 0 }
      // A handles its first `head` records, then holds every record handed to it at this gate
      // until the rebalance B's join starts has reached it (on kafkajs A's heartbeat inside its
      // batch hears it) or has gone on without it (B holds partitions): the rebalance lands
      // inside A's batches however slow or fast the machine. (With a delay per record instead,
      // A once finished all 400 first, and nothing was tested.)
      const rebalanced = gate()
      const start = async (name: 'A' | 'B') => {
        const watch = under.watch(topic)
        const source = sourceOf({ groupId, topics: [topic], partitionsConsumedConcurrently: 4, consumerConfig: watch.consumerConfig })
        watch.attach(source)
        const consumer = await startConsumer<PgClient, { n: number }>({
          inbox,
          source,
          handler: async (tx, message) => {
            if (name === 'A' && handledBy.A >= head) await rebalanced.opened
            await tx.query(`INSERT INTO ${ledger} VALUES ($1, $2)`, [message.id, name])
            handledBy[name]++
          },
        })
        cleanups.push(() => consumer.stop())
        return { consumer, rebalances: () => watch.rebalances(), holds: () => (watch.assignment() ?? []).length > 0 }
      }
      await tools.producer().send({ topic, messages: Array.from({ length: total }, (_, n) => ({ key: `k${n}`, value: JSON.stringify({ n }), partition: n % 4 })) })
      const a = await start('A')
      await eventually(() => handledBy.A >= head, 20_000, 'A to be under way')
      const b = await start('B')
      await eventually(() => a.rebalances() > 0 || b.holds(), 60_000, "the rebalance B's join starts to reach A")
      rebalanced.open()
      await eventually(async () => Number((await pool.query(`SELECT count(DISTINCT message_id)::int AS n FROM ${ledger}`)).rows[0].n) === total, 60_000, 'every record applied')
      await eventually(async () => (await uncommittedIn(topic, groupId)) === 0, 10_000, 'every offset committed')
      await a.consumer.stop()
      await b.consumer.stop()

      // A heard of the rebalance while it had records left (on kafkajs inside a batch, which it
      // started with all 400 fetched; on Confluent's client after the batch in hand, at most
      // 32 records) and gave partitions up.
      expect(a.rebalances()).toBeGreaterThan(0)
      expect(handledBy.A).toBeLessThan(total)
      expect(handledBy.B).toBeGreaterThan(0)
      const { rows } = await pool.query(`SELECT count(*)::int AS rows, count(DISTINCT message_id)::int AS messages FROM ${ledger}`)
      expect(rows[0]).toEqual({ rows: total, messages: total })
    }, patience(120_000))

    it('a record that keeps failing holds back its partition\'s commit, though the records after it are done; after a crash the next member gets it again', async () => {
      const { pool, store, ledger } = await ledgerOf('held_ledger')
      const topic = unique('held')
      const groupId = unique('held')
      const inbox = createInbox<PgClient, { n: number }>({ store, consumer: unique('held'), maxAttempts: 1_000 })
      await tools.producer().send({ topic, messages: Array.from({ length: 10 }, (_, n) => ({ value: JSON.stringify({ n }), partition: 0 })) })
      // Out of order (four at a time) and a commit after every record: only the run before the
      // failing one may be committed. Batches of all ten, so the records after it are handed over
      // while it fails (Confluent's client starts with batches of one record).
      const choice: SourceChoice = { groupId, topics: [topic], idempotent: under.idempotent, concurrency: 4, commitIntervalMs: 0, consumerConfig: under.wholeBatches }
      const start = async (name: string, source: MessageSource) => {
        const statuses = new Map<number, Status[]>()
        const consumer = await startConsumer<PgClient, { n: number }>({
          inbox,
          source,
          retry: { baseMs: 20, maxMs: 20 },
          handler: async (tx, message) => {
            if (name === 'A' && message.body.n === 0) throw new Error('the claims service is down')
            await tx.query(`INSERT INTO ${ledger} VALUES ($1, $2)`, [message.id, name])
          },
          onSettled: (result, delivery) => {
            const n = JSON.parse(Buffer.from(delivery.data).toString('utf8')).n as number
            statuses.set(n, [...(statuses.get(n) ?? []), result.status])
          },
        })
        cleanups.push(() => consumer.stop())
        return { consumer, statuses }
      }
      const crashable = await under.crashableSource(brokers(), choice)
      cleanups.push(crashable.dispose)
      const a = await start('A', crashable.source)
      await eventually(() => [1, 2, 3, 4, 5, 6, 7, 8, 9].every((n) => a.statuses.get(n)?.includes('processed')) && (a.statuses.get(0)?.length ?? 0) >= 5, 20_000, 'A to finish 1–9 and fail 0 repeatedly')
      // Nine done records after the failing one, and every one of them offered a commit: none went out.
      expect(await uncommittedIn(topic, groupId)).toBe(10)
      crashable.crash()
      void a.consumer.stop().catch(() => {})
      const b = await start('B', sourceOf(choice))
      await eventually(() => b.statuses.get(0)?.includes('processed') === true, 30_000, 'B to apply record 0')
      await eventually(async () => (await uncommittedIn(topic, groupId)) === 0, 10_000, 'every offset committed')
      await b.consumer.stop()
      for (let n = 1; n < 10; n++) expect(new Set(b.statuses.get(n))).toEqual(new Set(['duplicate']))
      const { rows } = await pool.query(`SELECT count(*)::int AS rows, count(DISTINCT message_id)::int AS messages FROM ${ledger}`)
      expect(rows[0]).toEqual({ rows: 10, messages: 10 })
    }, patience(90_000))

    it('seed scenario: commit, crash before the offset commit, the next member reads it again → 58 chunk rows and one email', async () => {
      await postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }).migrate()
      await seedScenario(harness(), schemaDb)
    }, patience(60_000))

    it('a poison message is dead-lettered after 3 attempts (table and <topic>.dead); the consumer goes on', async () => {
      await poisonScenario(harness(), schemaDb)
    }, patience(60_000))

    it('the outbox deliverer keys each record and puts the dedupe key in the idem-id header; a repeated send is consumed once', async () => {
      await delivererScenario(harness(), schemaDb)
    }, patience(60_000))

    it('10,000 messages, 20% published twice, workers crashing mid-transaction and before offset commits: each applied exactly once, none lost', async () => {
      // The mock cluster is the slowest broker here: on a loaded CI machine it applied 7,128
      // messages in 180 s (about 40 a second), so it gets longer.
      await chaosScenario(harness(), schemaDb, { appliedWithinMs: 420_000 })
    }, patience(540_000))

    it('a producer-set idem-id header is the id; without one the id is topic-partition-offset@timestamp', async () => {
      const topic = unique('ids')
      await tools.producer().send({ topic, messages: [{ value: '{}', partition: 1, headers: { 'idem-id': 'order-42' } }, { value: '{}', partition: 1 }] })
      const source = sourceOf({ groupId: unique('ids'), topics: [topic], deadLetterTopic: null })
      const ids: string[] = []
      const subscription = await source.subscribe(async (delivery) => {
        ids.push(delivery.id!)
        await delivery.ack()
      })
      await eventually(() => ids.length === 2, 20_000, 'both records')
      await subscription.close()
      expect(ids[0]).toBe('order-42')
      // The record's timestamp keeps the fallback apart from the same offset of a recreated topic.
      expect(ids[1]).toMatch(new RegExp(`^${topic}-1-1@\\d{13}$`))
    }, patience(60_000))

    /** Consumes `topic` of `kafka` through `inbox` until `count` records are settled; their statuses and ids. */
    async function consumeAll(kafka: KafkaClient, topic: string, inbox: ReturnType<typeof createInbox<PgClient>>, count: number) {
      const settled: Array<{ status: string; id: string | undefined }> = []
      const source = sourceOf({ groupId: unique('workers'), topics: [topic], deadLetterTopic: null }, kafka)
      const consumer = await startConsumer({ inbox, source, handler: () => undefined, onSettled: (result, delivery) => settled.push({ status: result.status, id: delivery.id }) })
      try {
        await eventually(() => settled.length >= count, 30_000, `${count} records settled`)
      } finally {
        await consumer.stop()
      }
      return settled
    }

    it('idem-id headers that are not UTF-8 (0xff01, 0xfe01) are ids of their bytes, never one "\\uFFFD\\u0001": each record is processed', async () => {
      await postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }).migrate()
      const inbox = createInbox<PgClient>({ store: postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }), consumer: unique('binary') })
      const topic = unique('binary-ids')
      const ids = [Buffer.from([0xff, 0x01]), Buffer.from([0xfe, 0x01]), Buffer.from('hex:ff01'), Buffer.from('\ufffd\u0001')]
      await tools.producer().send({ topic, messages: ids.map((id, n) => ({ value: JSON.stringify({ n }), partition: 0, headers: { 'idem-id': id } })) })
      const settled = await consumeAll(client(), topic, inbox, ids.length)
      // On 4ef1791 the second record (and the fourth) was settled duplicate and committed past, its handler never run.
      expect(settled).toEqual([
        { status: 'processed', id: 'hex:ff01' },
        { status: 'processed', id: 'hex:fe01' },
        { status: 'processed', id: 'hex:6865783a66663031' },
        { status: 'processed', id: '\ufffd\u0001' },
      ])
    }, patience(90_000))

    it('a topic deleted and created again (a new cluster here: the mock cannot delete topics) starts at offset 0 again; its records are new messages, not duplicates', async () => {
      await postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }).migrate()
      const inbox = createInbox<PgClient>({ store: postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }), consumer: unique('recreated') })
      const topic = unique('recreated')
      const round = async (label: string) => {
        const cluster = await startKafkaMock()
        try {
          const send = instrument(cluster.brokers).producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: false })
          await send.connect()
          // No idem-id header: the id is the fallback, and the records land on offsets 0, 1, 2 both times.
          await send.send({ topic, messages: [0, 1, 2].map((n) => ({ value: JSON.stringify({ label, n }), partition: 0 })) })
          await send.disconnect()
          return await consumeAll(under.client(cluster.brokers), topic, inbox, 3)
        } finally {
          await cluster.stop()
        }
      }
      const before = await round('before')
      const after = await round('after')
      expect(before.map((s) => s.status)).toEqual(['processed', 'processed', 'processed'])
      // On 4ef1791: ['duplicate', 'duplicate', 'duplicate'], the ids <topic>-0-0… of the first topic.
      expect(after.map((s) => s.status)).toEqual(['processed', 'processed', 'processed'])
      expect(after.map((s) => s.id!.split('@')[0])).toEqual(before.map((s) => s.id!.split('@')[0]))
    }, patience(120_000))
  })
}

/**
 * Whether `check` holds within `ms`. For a remedy's decision (give up on the group settling
 * and try another way), not a hang guard, so `ms` is not scaled by the machine's load.
 */
async function holdsWithin(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return true
}

/** Records on the topic not yet committed by the group. */
async function uncommitted(admin: Admin, topic: string, groupId: string): Promise<number> {
  const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })])
  let waiting = 0
  for (const { partition, high, low } of ends) {
    const offset = Number(committed!.partitions.find((p) => p.partition === partition)?.offset ?? -1)
    waiting += Number(high) - (offset < 0 ? Number(low) : offset)
  }
  return waiting
}

async function recordsIn(admin: Admin, topic: string): Promise<number> {
  try {
    const ends = await admin.fetchTopicOffsets(topic)
    return ends.reduce((sum, { high, low }) => sum + Number(high) - Number(low), 0)
  } catch {
    return 0 // not created yet: nothing was produced to it
  }
}

/**
 * Waits until the group has settled into members that hold disjoint partitions covering all
 * `count`. The mock cluster was seen to leave a group settled with every partition on one
 * member and none on the other for good (`[[],[0,1,2,3]]`) when the machine was loaded
 * while they joined, and to keep it so after the full member left and joined again five
 * times (the empty one was then another process); `rejoin` makes the member that holds
 * nothing leave and join again, which makes the coordinator rebalance, and is called when
 * the group stayed unbalanced for 20 s.
 */
async function balanced(assignments: (() => number[] | undefined)[], count: number, rejoin: () => Promise<void>): Promise<void> {
  let held: number[][] = []
  let lastRejoin = Date.now()
  await eventually(
    async () => {
      held = assignments.map((get) => get() ?? [])
      const all = held.flat()
      if (held.every((partitions) => partitions.length > 0) && all.length === count && new Set(all).size === count) return true
      // A remedy gets time to settle: a rebalance waits up to its timeout (10 s) for every
      // member, and the mock delays a join by about 3 s. (A remedy's moment is a choice, not
      // a hang guard, so it does not grow with the load: grown tenfold, waiting out remedies
      // alone took minutes.)
      if (Date.now() - lastRejoin > 20_000) {
        await rejoin()
        lastRejoin = Date.now()
      }
      return false
    },
    // The mock holds a new group's first join for about 3 s, and a loaded machine may need
    // a remedy or two more.
    150_000,
    'a balanced group',
  ).catch((error: Error) => {
    throw new Error(`${error.message}; the members last said they hold ${JSON.stringify(held)}`)
  })
}

/** A promise the test resolves when it decides: what a handler waits on until an event was observed. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

const PROMPT_VERSION = 'summary-prompt-v7'
type Status = ConsumeResult['status'] | 'error'
interface Intake {
  intakeId: string
  text: string
  partition: number
}
