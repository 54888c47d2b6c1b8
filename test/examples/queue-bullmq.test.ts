// examples/queue-bullmq.ts, which docs/queue.md shows whole with what it prints: on a
// real Redis, the failed first run is retried by BullMQ, the job added again under its
// id completes without running, and the table holds one order.
import { beforeAll, describe, expect, it } from 'vitest'
import { compiledExamples, expectPageShows, expectPageShowsOutput, runExample, servicesUp } from '../docs/support.js'

// The TypeScript examples compile once, before the tests that run them (a minute on a loaded machine).
beforeAll(async () => {
  await compiledExamples()
}, 300_000)

const PAGE = 'docs/queue.md'
const EXAMPLE = 'examples/queue-bullmq.ts'
const haveRedis = await servicesUp('Redis')

describe.skipIf(!haveRedis)(`${EXAMPLE}, shown in ${PAGE}`, () => {
  it('a failed attempt retried by BullMQ, the job added again a duplicate, one order, as the page shows', async () => {
    expectPageShows(PAGE, EXAMPLE)
    const stdout = await runExample(EXAMPLE)
    expect(stdout.trim().split('\n')).toEqual([
      'order-1001 attempt 1: failed (the ledger went away)',
      'order-1001 attempt 2: completed, returned {"charged":1500}',
      'order-1001 attempt 1: completed, returned nothing: a duplicate, the handler did not run',
      'orders in the table: 1',
    ])
    expectPageShowsOutput(PAGE, stdout)
  })
})
