// The broker deliverers' wiring of the dispatcher's signal: each refuses to start once
// it has fired, and SQS hands it to the SDK. (Their deliveries against real brokers are
// in test/queue/*.test.ts.)
import { describe, expect, it } from 'vitest'
import type { OutboxRow } from './dispatcher.js'
import { kafkaDeliverer } from './kafka/index.js'
import { natsDeliverer } from './nats/index.js'
import { rabbitmqDeliverer } from './rabbitmq/index.js'
import { redisStreamDeliverer } from './redis-streams/index.js'
import { sqsDeliverer } from './sqs/index.js'

const row: OutboxRow = { id: '1', topic: 't', payload: { n: 1 }, dedupeKey: 'k', attempt: 1, lastError: null, createdAt: new Date() }

function aborted(): AbortSignal {
  const controller = new AbortController()
  controller.abort(new DOMException('past the deadline', 'TimeoutError'))
  return controller.signal
}

describe('broker deliverers and the dispatcher signal', () => {
  it('none starts a send once the signal has fired, and each still works without one', async () => {
    const sent: string[] = []
    const deliverers = [
      rabbitmqDeliverer({ channel: { publish: (_e, _k, _c, _o, done) => (sent.push('rabbitmq'), done(null), true) } }),
      natsDeliverer({ js: { publish: async () => (sent.push('nats'), { duplicate: false, seq: 1 }) } }),
      redisStreamDeliverer({ redis: { call: async () => void sent.push('redis') } }),
      sqsDeliverer({ client: { send: async () => void sent.push('sqs') }, queueUrl: 'https://sqs.invalid/q' }),
      kafkaDeliverer({
        kafka: {
          consumer: () => {
            throw new Error('not used')
          },
          producer: () => ({ connect: async () => {}, disconnect: async () => {}, send: async () => void sent.push('kafka') }),
        },
      }),
    ]
    for (const deliver of deliverers) await expect(deliver(row, { signal: aborted() })).rejects.toMatchObject({ name: 'TimeoutError' })
    expect(sent).toEqual([])
    for (const deliver of deliverers) await deliver(row)
    expect(sent).toEqual(['rabbitmq', 'nats', 'redis', 'sqs', 'kafka'])
  })

  it('sqsDeliverer passes the signal to the SDK as the request abortSignal', async () => {
    const seen: unknown[] = []
    const deliver = sqsDeliverer({ client: { send: async (_command, options) => void seen.push(options?.abortSignal) }, queueUrl: 'https://sqs.invalid/q' })
    const { signal } = new AbortController()
    await deliver(row, { signal })
    expect(seen).toEqual([signal])
  })
})
