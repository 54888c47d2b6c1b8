// Every hold the DynamoDB store has, against a holder that does not let go: the other
// side's wait ends within its bound (it never waits for the holder), with an answer it
// can retry on; once the hold ends, the work is done exactly once. Each holder waits on
// a gate the test opens only after the other side has its answer, so that answer can
// only come from the bound. The holds: an inbox delivery's message id (the delivery's
// `waitMs`, then `in-flight`; the holder itself is bounded by the inbox's `deadlineMs`),
// a `once` mark (`markWaitMs`, then StoreUnavailableError), a leased key (the engine's
// `waitMs`, then InFlightError). The store has no outbox, so no outbox hold: shown last.
import { GetItemCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb'
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { createLeasedIdem } from '../../src/core/leased/engine.js'
import { InFlightError, InvalidOptionError, OverranError, StoreUnavailableError } from '../../src/core/errors/index.js'
import { createOnce } from '../../src/data/index.js'
import { createDispatcher, createInbox, createOutbox } from '../../src/queue/index.js'
import { dynamodbStore, type DynamoTx } from '../../src/stores/dynamodb/index.js'
import { testDynamo, type TestDynamo } from '../support/dynamodb.js'
import { gate, within } from './support.js'

const dynamo = await testDynamo('holds')

/** Each waiter's bound: small, so the file is quick. */
const WAIT_MS = 300
/** How long a test lets a waiter take before it fails as unbounded: the bound, and slack for a loaded machine. */
const GUARD_MS = WAIT_MS + 10_000

describe.skipIf(dynamo === undefined)('bounded holds on DynamoDB (DynamoDB Local)', () => {
  const { store, client, table } = dynamo as TestDynamo
  afterAll(() => dynamo?.drop())

  const effectKey = (id: string) => ({ pk: { S: `effect#${id}` }, sk: { S: '#' } })
  /** The effect `id`'s work writes: one more on its counter, staged in the write set. */
  const effect = (id: string): TransactWriteItem => ({
    Update: { TableName: table, Key: effectKey(id), UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': { N: '1' } } },
  })
  async function effects(id: string): Promise<number> {
    const { Item } = await client.send(new GetItemCommand({ TableName: table, Key: effectKey(id), ConsistentRead: true }))
    return Number(Item?.n?.N ?? 0)
  }

  it('inbox: a duplicate waits at most waitMs for a delivery that holds the id, answers in-flight, and the redelivery after the holder commits is a duplicate', async () => {
    const inbox = createInbox<DynamoTx, { orderId: string }>({ store, consumer: `holds-${randomUUID()}`, waitMs: WAIT_MS })
    const message = { id: randomUUID(), body: { orderId: randomUUID() }, deliveryCount: 1 }
    const holding = gate()
    const release = gate()
    const handler = async (tx: DynamoTx, { body }: { body: { orderId: string } }) => {
      tx.write(effect(body.orderId))
      holding.open()
      await release.passed
    }
    const holder = inbox.consume(message, handler)
    await holding.passed
    const duplicate = await within(GUARD_MS, inbox.consume({ ...message, deliveryCount: 2 }, handler), 'the duplicate still waits')
    expect(duplicate).toMatchObject({ status: 'in-flight', retryAfterMs: expect.any(Number) })
    release.open()
    expect(await holder).toMatchObject({ status: 'processed' })
    expect(await inbox.consume({ ...message, deliveryCount: 3 }, handler)).toMatchObject({ status: 'duplicate' })
    expect(await effects(message.body.orderId)).toBe(1)
  })

  it('inbox: a holder that never returns is given up on at deadlineMs, its id let go; the redelivery then runs once', async () => {
    const inbox = createInbox<DynamoTx, { orderId: string }>({ store, consumer: `holds-${randomUUID()}`, waitMs: 0, deadlineMs: 1_000 })
    const message = { id: randomUUID(), body: { orderId: randomUUID() }, deliveryCount: 1 }
    const holding = gate()
    const stuck = inbox.consume(message, async (tx, { body }) => {
      tx.write(effect(body.orderId))
      holding.open()
      await new Promise<never>(() => {})
    })
    await holding.passed
    const run = async (tx: DynamoTx, { body }: { body: { orderId: string } }) => tx.write(effect(body.orderId))
    expect(await inbox.consume({ ...message, deliveryCount: 2 }, run)).toMatchObject({ status: 'in-flight' })
    const given = await within(GUARD_MS, stuck, 'the stuck delivery still holds its id')
    expect(given.status === 'failed' && given.error).toBeInstanceOf(OverranError)
    expect(await inbox.consume({ ...message, deliveryCount: 3 }, run)).toMatchObject({ status: 'processed' })
    expect(await inbox.consume({ ...message, deliveryCount: 4 }, run)).toMatchObject({ status: 'duplicate' })
    expect(await effects(message.body.orderId)).toBe(1)
  })

  describe('once', () => {
    // The waiter's store: the same table, marks waiting markWaitMs = WAIT_MS.
    const waiter = dynamodbStore({ client, table, markWaitMs: WAIT_MS })
    const once = createOnce({ store })
    const waiterOnce = createOnce({ store: waiter })

    /** A transaction that marks `subject`, stages its effect, and holds both until `release` opens (or throws when `fail`). */
    function holder(subject: string, release: Promise<void>, fail = false) {
      const holding = gate()
      const done = store.transaction(async (tx) => {
        if (await once(tx, 'email', subject)) tx.write(effect(subject))
        holding.open()
        await release
        if (fail) throw new Error('the holder failed')
      })
      return { holding: holding.passed, done }
    }
    /** The other side's work: the same effect, behind the same mark. */
    const work = (subject: string) =>
      waiter.transaction(async (tx) => {
        const first = await waiterOnce(tx, 'email', subject)
        if (first) tx.write(effect(subject))
        return first
      })

    it('a mark held by an open transaction: the other waits at most markWaitMs and is refused retryably; after the holder commits, its retry finds the mark and writes nothing', async () => {
      const subject = randomUUID()
      const release = gate()
      const held = holder(subject, release.passed)
      await held.holding
      const refused = await within(GUARD_MS, work(subject).catch((error: unknown) => error), 'the other transaction still waits on the mark')
      expect(refused).toBeInstanceOf(StoreUnavailableError)
      expect((refused as StoreUnavailableError).message).toMatch(/markWaitMs/)
      release.open()
      await held.done
      expect(await work(subject)).toBe(false)
      expect(await effects(subject)).toBe(1)
    })

    it('a mark held by a transaction that then rolls back: the other is refused within markWaitMs, and its retry does the work once', async () => {
      const subject = randomUUID()
      const release = gate()
      const held = holder(subject, release.passed, true)
      await held.holding
      await expect(within(GUARD_MS, work(subject), 'the other transaction still waits on the mark')).rejects.toBeInstanceOf(StoreUnavailableError)
      release.open()
      await expect(held.done).rejects.toThrow('the holder failed')
      expect(await work(subject)).toBe(true)
      expect(await work(subject)).toBe(false)
      expect(await effects(subject)).toBe(1)
    })
  })

  it('leased key: a duplicate waits at most waitMs for the call that holds the key, then InFlightError; after it completes, the retry replays it', async () => {
    const idem = createLeasedIdem({ store, waitMs: WAIT_MS })
    const call = { scope: 'holds', key: randomUUID(), input: { orderId: 'o-1' } }
    const holding = gate()
    const release = gate()
    let runs = 0
    const fn = async () => {
      runs++
      holding.open()
      await release.passed
      return { shipped: 'o-1' }
    }
    const first = idem.run(call, fn)
    await holding.passed
    await expect(within(GUARD_MS, idem.run(call, fn), 'the duplicate still waits')).rejects.toBeInstanceOf(InFlightError)
    release.open()
    expect(await first).toMatchObject({ value: { shipped: 'o-1' }, replayed: false })
    expect(await idem.run(call, fn)).toMatchObject({ value: { shipped: 'o-1' }, replayed: true })
    expect(runs).toBe(1)
  })

  it('outbox: the store has none, so nothing waits on one: createOutbox and createDispatcher refuse it at creation', () => {
    // @ts-expect-error the DynamoDB store has no outbox table, and its type says so
    expect(() => createOutbox({ store })).toThrow(InvalidOptionError)
    // @ts-expect-error as above
    expect(() => createDispatcher({ store, deliver: async () => {} })).toThrow(/has no outbox table/)
  })
})
