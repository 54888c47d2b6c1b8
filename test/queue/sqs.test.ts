import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import { afterAll, describe, expect, it } from 'vitest'
import { createInbox } from '../../src/queue/index.js'
import { sqsDeliverer, sqsSource } from '../../src/queue/sqs/index.js'
import { postgresStore } from '../../src/stores/postgres/index.js'
import { patience } from '../support/patience.js'
import { testSchema, type TestSchema } from '../support/postgres.js'
import { chaosScenario, delivererScenario, poisonScenario, reach, seedScenario, unique, type BrokerHarness } from './support.js'

// fauxqs: an SQS emulator from npm, run in-process on a loopback port (no network, no Docker).
const emulator = await reach('SQS emulator (fauxqs)', 'http://127.0.0.1:<ephemeral>', async () => {
  const { startFauxqs } = (await import('fauxqs')) as { startFauxqs: (o: object) => Promise<{ address: string; stop(): Promise<void> }> }
  return startFauxqs({ port: 0, host: '127.0.0.1', logger: false })
})
const client = emulator
  ? new SQSClient({ endpoint: emulator.address, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } })
  : undefined
const db = emulator ? await testSchema('idem_q_sqs') : undefined

afterAll(async () => {
  await db?.drop()
  client?.destroy()
  await emulator?.stop()
})

async function count(queueUrl: string): Promise<number> {
  const { Attributes } = await client!.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  )
  return Number(Attributes?.ApproximateNumberOfMessages ?? 0) + Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
}

async function harness(): Promise<BrokerHarness> {
  const name = unique('idem-test')
  // A 1 s visibility timeout: an undeleted message (a crashed worker) is visible again after it.
  const { QueueUrl: queueUrl } = await client!.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '1' } }))
  const { QueueUrl: dlqUrl } = await client!.send(new CreateQueueCommand({ QueueName: `${name}-dead` }))
  return {
    copiesOfRepeat: 2,
    async publish(id, body) {
      await client!.send(
        new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(body), MessageAttributes: { 'idem-id': { DataType: 'String', StringValue: id } } }),
      )
    },
    async open() {
      // SQS has no connection to drop: a worker that stops without DeleteMessage is a crash.
      const nothing = async () => {}
      return { source: sqsSource({ client: client!, queueUrl: queueUrl!, waitTimeSeconds: 1, deadLetterQueueUrl: dlqUrl! }), crash: nothing, close: nothing }
    },
    deliverer: () => sqsDeliverer({ client: client!, queueUrl: queueUrl! }),
    brokerDeadLetters: () => count(dlqUrl!),
    outstanding: () => count(queueUrl!),
  }
}

describe.skipIf(db === undefined)('SQS adapter (@aws-sdk/client-sqs against the fauxqs emulator)', () => {
  const schemaDb = db as TestSchema
  it('seed scenario: commit, crash before DeleteMessage, redelivery after the visibility timeout → 58 chunk rows and one email', async () => {
    await postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }).migrate()
    await seedScenario(await harness(), schemaDb)
  })

  it('a poison message is dead-lettered after 3 attempts (table and the dead-letter queue); the consumer goes on', async () => {
    await poisonScenario(await harness(), schemaDb)
  })

  it('the outbox deliverer puts the dedupe key in the idem-id attribute; a repeated send is consumed once', async () => {
    await delivererScenario(await harness(), schemaDb)
  })

  it('10,000 messages, 20% published twice, workers crashing mid-transaction and before deletes: each applied exactly once, none lost', async () => {
    await chaosScenario(await harness(), schemaDb)
  }, patience(240_000))

  it("reads the queue's retention period as the redelivery horizon, and the inbox warns when it keeps ids for less", async () => {
    const { QueueUrl } = await client!.send(new CreateQueueCommand({ QueueName: unique('idem-retention'), Attributes: { MessageRetentionPeriod: '1209600' } }))
    const source = sqsSource({ client: client!, queueUrl: QueueUrl! })
    expect(await source.redeliveryHorizonMs!()).toBe(1_209_600_000)
    const warnings: string[] = []
    const inbox = createInbox({ store: postgresStore({ pool: schemaDb.pool, schema: schemaDb.schema }), consumer: 'short-memory', retentionMs: 60_000, onWarning: (w) => warnings.push(w.code) })
    inbox.expectRedeliveryWithin((await source.redeliveryHorizonMs!())!, source.name)
    inbox.expectRedeliveryWithin(1_209_600_000, source.name)
    expect(warnings).toEqual(['retention-shorter-than-redelivery-horizon'])
  })
})
