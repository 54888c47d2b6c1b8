// Two transactions that each hold a `once` mark the other asks for (crossed marks) on
// DynamoDB: the wait is bounded (markWaitMs, 5 s by default), the younger gives up with
// StoreUnavailableError and writes nothing, and the older then commits both marks.
// Through both of the store's transactions that hold marks: `store.transaction` and an
// inbox delivery's write set (which also holds the message id). Before the bound, both
// waited until the test's own limit here (the inbox's until its 5-minute deadline).
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../src/core/errors/index.js'
import { createOnce } from '../../src/data/index.js'
import { createInbox, type ConsumeResult } from '../../src/queue/index.js'
import { DEFAULT_DYNAMODB_MARK_WAIT_MS, type DynamoTx } from '../../src/stores/dynamodb/index.js'
import { testDynamo, type TestDynamo } from '../support/dynamodb.js'
import { within } from './support.js'

const dynamo = await testDynamo('crossed')

// The younger side gives up after markWaitMs; the rest is slack for a loaded machine.
const BOUND_MS = DEFAULT_DYNAMODB_MARK_WAIT_MS + 10_000

/** A barrier for two: each side arrives, and goes on once both have. */
function barrier(): () => Promise<void> {
  let arrived = 0
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return async () => {
    if (++arrived === 2) open()
    await opened
  }
}

describe.skipIf(dynamo === undefined)('crossed once marks on DynamoDB (DynamoDB Local)', () => {
  const { store } = dynamo as TestDynamo
  afterAll(() => dynamo?.drop())
  const once = createOnce({ store })

  /** Marks `first`, waits until the other side has marked its first too, then marks `second`. */
  const crossing = (both: () => Promise<void>) => async (tx: DynamoTx, first: string, second: string) => {
    const marks = [await once(tx, 'email', first)]
    await both()
    marks.push(await once(tx, 'email', second))
    return marks
  }

  it('store.transaction: one side is refused with StoreUnavailableError within the bound, the other commits both marks', async () => {
    const [u1, u2] = [randomUUID(), randomUUID()]
    const mark = crossing(barrier())
    const started = Date.now()
    const [a, b] = await within(
      BOUND_MS,
      Promise.allSettled([store.transaction((tx) => mark(tx, u1, u2)), store.transaction((tx) => mark(tx, u2, u1))]),
      "still waiting on each other's marks",
    )
    const elapsed = Date.now() - started
    const committed = [a, b].filter((r) => r.status === 'fulfilled')
    const refused = [a, b].filter((r) => r.status === 'rejected')
    expect(committed.map((r) => r.value)).toEqual([[true, true]])
    expect(refused).toHaveLength(1)
    expect(refused[0]!.reason).toBeInstanceOf(StoreUnavailableError)
    expect(refused[0]!.reason.message).toMatch(/markWaitMs/)
    expect(elapsed).toBeGreaterThanOrEqual(DEFAULT_DYNAMODB_MARK_WAIT_MS)
    // The refused side wrote nothing of its own, and its retry finds both marks committed.
    expect(await store.transaction(async (tx) => [await once(tx, 'email', u1), await once(tx, 'email', u2)])).toEqual([false, false])
  }, BOUND_MS + 20_000)

  it('inbox: of two deliveries crossing marks, one is processed and the other fails retryably, lets its id go, and its redelivery is processed', async () => {
    const inbox = createInbox<DynamoTx, { first: string; second: string }>({ store, consumer: `crossed-${randomUUID()}`, waitMs: 0 })
    const [u1, u2] = [randomUUID(), randomUUID()]
    const mark = crossing(barrier())
    const handler = (tx: DynamoTx, message: { body: { first: string; second: string } }) => mark(tx, message.body.first, message.body.second)
    const messages = [
      { id: randomUUID(), body: { first: u1, second: u2 }, deliveryCount: 1 },
      { id: randomUUID(), body: { first: u2, second: u1 }, deliveryCount: 1 },
    ]
    const results: ConsumeResult<boolean[]>[] = await within(BOUND_MS, Promise.all(messages.map((m) => inbox.consume(m, handler))), "still waiting on each other's marks")
    expect(results.map((r) => r.status).sort()).toEqual(['failed', 'processed'])
    const processed = results.find((r) => r.status === 'processed')
    expect(processed?.status === 'processed' && processed.value).toEqual([true, true])
    const failed = results.findIndex((r) => r.status === 'failed')
    const failure = results[failed]!
    expect(failure.status === 'failed' && failure.error).toBeInstanceOf(StoreUnavailableError)
    // Its id was handed back at once (waitMs 0 would answer in-flight otherwise); the marks are the winner's.
    const again = await inbox.consume({ ...messages[failed]!, deliveryCount: 2 }, handler)
    expect(again.status === 'processed' && again.value).toEqual([false, false])
  }, BOUND_MS + 20_000)
})
