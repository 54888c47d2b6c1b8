import amqplib from 'amqplib'
import { afterAll, describe, it } from 'vitest'
import { rabbitmqDeliverer, rabbitmqSource } from '../../src/queue/rabbitmq/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { chaosScenario, delivererScenario, poisonScenario, reach, seedScenario, unique, type BrokerHarness } from './support.js'

const URL = process.env.IDEM_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const admin = await reach('RabbitMQ', URL, () => amqplib.connect(URL, { timeout: 3_000 }))
const db = admin ? await testSchema('idem_q_rabbit') : undefined

const queues: string[] = []
afterAll(async () => {
  await db?.drop()
  if (admin) {
    const channel = await admin.createChannel()
    for (const queue of queues) await channel.deleteQueue(queue)
    await admin.close()
  }
})

/** A quorum queue (so deliveries are counted) with a dead-letter queue behind it. */
async function harness(): Promise<BrokerHarness> {
  const queue = unique('idem_test')
  const dlq = `${queue}.dead`
  queues.push(queue, dlq)
  const channel = await admin!.createChannel()
  await channel.assertQueue(dlq, { durable: true, arguments: { 'x-queue-type': 'quorum' } })
  await channel.assertQueue(queue, {
    durable: true,
    arguments: { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': dlq },
  })
  const confirm = await admin!.createConfirmChannel()
  return {
    copiesOfRepeat: 2,
    async publish(id, body) {
      channel.sendToQueue(queue, Buffer.from(JSON.stringify(body)), { messageId: id, persistent: true })
    },
    async open() {
      const connection = await amqplib.connect(URL, { timeout: 3_000 })
      const consumerChannel = await connection.createChannel()
      let closed = false
      const close = async () => {
        if (closed) return
        closed = true
        await connection.close().catch(() => {})
      }
      // Closing the connection without acks is what a crash looks like to the broker: it requeues.
      return { source: rabbitmqSource({ channel: consumerChannel, queue, prefetch: 10 }), crash: close, close }
    },
    deliverer: () => rabbitmqDeliverer({ channel: confirm, routingKey: () => queue }),
    async brokerDeadLetters() {
      return (await channel.checkQueue(dlq)).messageCount
    },
    async outstanding() {
      const { messageCount } = await channel.checkQueue(queue)
      return messageCount
    },
  }
}

describe.skipIf(db === undefined)('RabbitMQ adapter (amqplib, real broker)', () => {
  const schemaDb = db as TestSchema
  it('seed scenario: commit, crash before ack, redelivery → 58 chunk rows and one email', async () => {
    await postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }).migrate()
    await seedScenario(await harness(), schemaDb)
  })

  it('a poison message is dead-lettered after 3 attempts (table and DLX queue); the consumer goes on', async () => {
    await poisonScenario(await harness(), schemaDb)
  })

  it('10,000 messages, 20% published twice, workers crashing mid-transaction and before acks: each applied exactly once, none lost', async () => {
    await chaosScenario(await harness(), schemaDb)
  }, 240_000)

  it('the outbox deliverer sets messageId to the dedupe key; a repeated publish is consumed once', async () => {
    await delivererScenario(await harness(), schemaDb)
  })
})
