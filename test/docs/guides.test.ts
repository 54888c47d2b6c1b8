// Every guide in docs/guides/ shows its example file verbatim and the output it prints;
// each example runs here against the real services, and its output is what the guide
// claims: one payment across retries, one charge at the provider, one order and one
// email per message, one LLM call per document, what Redis keys keep and lose.
import { describe, expect, it } from 'vitest'
import { expectPageShows, expectPageShowsOutput, runExample, servicesUp } from './support.js'

const haveDb = await servicesUp('Postgres')
const haveRabbit = haveDb && (await servicesUp('RabbitMQ'))
const haveRedis = haveDb && (await servicesUp('Redis'))

const PAYMENTS = 'docs/guides/payments-api.md'

describe.skipIf(!haveDb)('guide: a payments API on Hono, Express and Fastify with Postgres', () => {
  for (const framework of ['hono', 'express', 'fastify']) {
    it(`${framework}: the failed attempt rolls back with its key, the retry charges once, then replay and 422`, async () => {
      const file = `examples/guides/payments-${framework}.mjs`
      expectPageShows(PAYMENTS, file)
      const stdout = await runExample(file)
      const lines = stdout.trim().split('\n')
      expect(lines[0]).toBe('500 {"error":"the ledger went away"}')
      // id 2: the rolled-back attempt's INSERT really ran (it used the sequence's 1) and was undone.
      expect(lines[1]).toBe('201 {"paymentId":"2","amount":1500}')
      expect(lines[2]).toBe('201 (replayed) {"paymentId":"2","amount":1500}')
      expect(JSON.parse(lines[3]!.replace(/^422 /, ''))).toMatchObject({ status: 422, code: 'fingerprint-mismatch' })
      expect(lines[4]).toBe('payments in the table: 1')
      expect(lines).toHaveLength(5)
      expectPageShowsOutput(PAYMENTS, stdout)
    })
  }
})

describe.skipIf(!haveDb)('guide: calling a payment provider from a handler (leased steps, derived keys)', () => {
  it('the API process dies after the provider charged and after the step was saved: 2 provider requests, 1 charge, 1 payment row', async () => {
    const guide = 'docs/guides/payment-provider.md'
    const file = 'examples/guides/payment-provider.mjs'
    expectPageShows(guide, file)
    const stdout = await runExample(file)
    expect(stdout).toBe(
      [
        'attempt 1: no answer, the API process died (after-provider)',
        'attempt 2: no answer, the API process died (after-charge-step)',
        'attempt 3: 201 {"chargeId":"ch_1","amount":1500}',
        'attempt 4: 201 (replayed) {"chargeId":"ch_1","amount":1500}',
        'the provider saw 2 requests and made 1 charge',
        'payments in the table: 1',
        '',
      ].join('\n'),
    )
    expectPageShowsOutput(guide, stdout)
  })
})

describe.skipIf(!haveRabbit)('guide: an idempotent queue consumer with an outbox (RabbitMQ, Postgres)', () => {
  it('a message published twice and redelivered after a crash before the ack: the handler runs once, one order, one email', async () => {
    const guide = 'docs/guides/queue-consumer.md'
    const file = 'examples/guides/queue-consumer.mjs'
    expectPageShows(guide, file)
    const stdout = await runExample(file)
    expect(stdout).toBe(
      [
        'worker 1: processed order-1001, then died before its ack',
        'worker 2: duplicate order-1001',
        'worker 2: duplicate order-1001',
        'the handler ran 1 time; orders in the table: 1',
        'emails published: 1 (messageId order-confirmation:order-1001)',
        '',
      ].join('\n'),
    )
    expectPageShowsOutput(guide, stdout)
  })
})

describe.skipIf(!haveDb)('guide: the ingestion pipeline with content ids and a memoised LLM step', () => {
  it('four runs of one document (two racing): one LLM call, the first answer everywhere, no duplicate chunk; a new prompt version adds a row', async () => {
    const guide = 'docs/guides/ingestion-pipeline.md'
    const file = 'examples/guides/ingestion-pipeline.mjs'
    expectPageShows(guide, file)
    const stdout = await runExample(file)
    const summary = 'Summary #1: The insured reports water damage…'
    expect(stdout).toBe(
      [
        `delivery: ${summary}`,
        `redelivery: ${summary}`,
        `two workers at once: ${summary} | ${summary}`,
        'LLM calls: 1; chunks: 6; summaries: 1',
        'reconcile: 0 duplicate chunk rows of 6',
        'prompt v4: Summary #2: The insured reports water damage… (LLM calls: 2; summaries: 2)',
        '',
      ].join('\n'),
    )
    expectPageShowsOutput(guide, stdout)
  })
})

describe.skipIf(!haveRedis)('guide: moving keys to Redis', () => {
  it('replays from Redis; the upsert by derived key keeps one payment, the plain INSERT keeps the failed attempt\'s row; keys expire in 24 h', async () => {
    const guide = 'docs/guides/redis-keys.md'
    const file = 'examples/guides/redis-keys.mjs'
    expectPageShows(guide, file)
    const stdout = await runExample(file)
    expect(stdout).toBe(
      [
        '500 {"error":"the ledger went away"}',
        '201 {"paymentId":"1","amount":1500}',
        '201 (replayed) {"paymentId":"1","amount":1500}',
        '422 fingerprint-mismatch',
        'payments (upsert by key): 1; ledger (plain INSERT): 2',
        'keys in Redis: 1, expiring in 24 h',
        '',
      ].join('\n'),
    )
    expectPageShowsOutput(guide, stdout)
  })
})
