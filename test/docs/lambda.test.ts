// docs/lambda.md shows its two examples verbatim with what they print; each runs here
// against the real service: the EventBridge target on DynamoDB Local (replay, another
// payload refused, a timeout whose retry resumes after the saved step: one booking per
// order) and the functions on Postgres (one shipment, a poison SQS record reported alone,
// twice).
import { beforeAll, describe, expect, it } from 'vitest'
import { testDynamo } from '../support/dynamodb.js'
import { compiledExamples, expectPageShows, expectPageShowsOutput, runExample, servicesUp } from './support.js'

// The TypeScript examples compile once, before the tests that run them (a minute on a loaded machine).
beforeAll(async () => {
  await compiledExamples()
}, 300_000)

const PAGE = 'docs/lambda.md'
const haveDb = await servicesUp('Postgres')
// testDynamo makes (and here at once drops) a table: DynamoDB Local answers, or the file skips outside CI.
const dynamo = await testDynamo('docs')
await dynamo?.drop()

describe.skipIf(dynamo === undefined)('docs/lambda.md: an EventBridge target on DynamoDB', () => {
  it('replays, refuses another payload, and after a timeout the retry resumes: one booking per order', async () => {
    const file = 'examples/guides/lambda-dynamodb.ts'
    expectPageShows(PAGE, file)
    const stdout = await runExample(file)
    expect(stdout.trim().split('\n')).toEqual([
      "first delivery: { bookingId: 'bk_1' }",
      "EventBridge retries it: { bookingId: 'bk_1' }",
      'same id, other detail: FingerprintMismatchError',
      'timed out: OverranError (overran)',
      "the retry: { bookingId: 'bk_2' }",
      'courier bookings: o-1001, o-1002',
    ])
    expectPageShowsOutput(PAGE, stdout)
  })
})

describe.skipIf(!haveDb)('docs/lambda.md: an HTTP API behind a Function URL', () => {
  it('201, then the replay, 422 for another body, 400 without a key; one order', async () => {
    const file = 'examples/guides/lambda-http.ts'
    expectPageShows(PAGE, file)
    const stdout = await runExample(file)
    const lines = stdout.trim().split('\n')
    expect(lines[0]).toBe('201 {"orderId":1,"amount":1500}')
    expect(lines[1]).toBe('201 (replayed) {"orderId":1,"amount":1500}')
    expect(lines[2]).toMatch(/^422 \{"type":"urn:idem:problem#fingerprint-mismatch"/)
    expect(lines[3]).toMatch(/^400 \{"type":"urn:idem:problem#missing-key"/)
    expect(lines.slice(4)).toEqual(['orders in the table: 1'])
    expectPageShowsOutput(PAGE, stdout)
  })
})

describe.skipIf(!haveDb)('docs/lambda.md: functions on Postgres', () => {
  it('one shipment for two deliveries; the poison record reported alone, and nothing applied twice', async () => {
    const file = 'examples/guides/lambda-postgres.ts'
    expectPageShows(PAGE, file)
    const stdout = await runExample(file)
    expect(stdout.trim().split('\n')).toEqual([
      "{ shipped: 'o-2001' }",
      "{ shipped: 'o-2001' }",
      'restock: {"batchItemFailures":[{"itemIdentifier":"m-2"}]}',
      'restock again: {"batchItemFailures":[{"itemIdentifier":"m-2"}]}',
      'shipments: 1 | stock rows: pots 2, tea 5',
    ])
    expectPageShowsOutput(PAGE, stdout)
  })
})
