// The idem/lambda scenarios, one body for every backend (drizzle's pattern): each
// backend file supplies its engine, its inbox and how an effect is written and counted,
// and runs these against its real service. Handlers are driven the way Lambda drives
// them: real-shaped events (support.ts), a context whose remaining time counts down, and
// as many invocations at once as the test says.
import type { APIGatewayProxyEventV2, Context, EventBridgeEvent, SQSEvent } from 'aws-lambda'
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { FingerprintMismatchError, InFlightError, MissingKeyError, OverranError } from '../../src/core/errors/index.js'
import { makeHttpHandler, makeIdempotent, makeSqsBatchHandler, type LambdaEngine } from '../../src/lambda/index.js'
import type { Inbox } from '../../src/queue/index.js'
import { middyScenarios } from './middy-scenarios.js'
import { forever, httpApiRequest, lambdaContext, orderPlaced, redelivered, sleep, snsNotification, sqsRecord, type OrderPlaced } from './support.js'

export interface LambdaBackend<Tx, InboxTx> {
  /** The engine the functions run on. */
  readonly idem: LambdaEngine<Tx>
  /**
   * How long a retry may wait for a key its timed-out invocation held: 0 where letting
   * go is one round trip the engine awaits (a released lease); a little on Postgres,
   * where the server ends the abandoned connection's transaction as it notices the close.
   */
  readonly retryWaitMs: number
  /** Writes one effect for `id` as the engine's call makes it: through the transaction, or in a step. */
  effect(tx: Tx, id: string): Promise<void>
  /** Effects written for `id`, committed. */
  count(id: string): Promise<number>
  /** A new inbox of its own on the backend's store. */
  inbox(maxAttempts?: number): Inbox<InboxTx, unknown>
  /** Writes one effect for `id` in the inbox's transaction. */
  recordEffect(tx: InboxTx, id: string): Promise<void> | void
}

type OrderEvent = EventBridgeEvent<'Order Placed', OrderPlaced>

export function lambdaScenarios<Tx, InboxTx>(name: string, backend: () => LambdaBackend<Tx, InboxTx>): void {
  describe(`${name}: makeIdempotent`, () => {
    /** A function that ships an order: counts its runs and writes one effect per order, then takes `ms`. */
    function shipping(ms = 0, stall?: () => Promise<never>) {
      const runs: string[] = []
      const fn = async (event: OrderEvent, _context: Context, tx: Tx) => {
        runs.push(event.id)
        await backend().effect(tx, event.detail.orderId)
        if (stall !== undefined) await stall()
        if (ms > 0) await sleep(ms)
        return { shipped: event.detail.orderId, amount: event.detail.amount }
      }
      return { runs, fn }
    }

    it('20 concurrent invocations of one EventBridge event: the function runs once, every invocation returns its result', async () => {
      const { runs, fn } = shipping(150)
      const handler = makeIdempotent(fn, { idem: backend().idem })
      const event = orderPlaced({ orderId: randomUUID(), amount: 42 })
      const results = await Promise.all(Array.from({ length: 20 }, () => handler(event, lambdaContext(30_000))))
      expect(runs).toEqual([event.id])
      expect(results).toEqual(Array.from({ length: 20 }, () => ({ shipped: event.detail.orderId, amount: 42 })))
      expect(await backend().count(event.detail.orderId)).toBe(1)
      // A retry long after: the stored result, nothing runs.
      expect(await handler(event, lambdaContext(30_000))).toEqual({ shipped: event.detail.orderId, amount: 42 })
      expect(runs).toHaveLength(1)
    })

    it('another payload under a used event id is refused (FingerprintMismatchError), and nothing runs', async () => {
      const { runs, fn } = shipping()
      const handler = makeIdempotent(fn, { idem: backend().idem })
      const event = orderPlaced({ orderId: randomUUID(), amount: 42 })
      await handler(event, lambdaContext(30_000))
      const forged = { ...event, detail: { ...event.detail, amount: 4_200 } }
      await expect(handler(forged, lambdaContext(30_000))).rejects.toBeInstanceOf(FingerprintMismatchError)
      expect(runs).toHaveLength(1)
      expect(await backend().count(event.detail.orderId)).toBe(1)
    })

    it('payload validation on part of the event (input): a new envelope with the same key and detail replays', async () => {
      const { runs, fn } = shipping()
      const handler = makeIdempotent(fn, { idem: backend().idem, key: (event) => `order-${event.detail.orderId}`, input: (event) => event.detail })
      const detail = { orderId: randomUUID(), amount: 7 }
      await handler(orderPlaced(detail), lambdaContext(30_000))
      // The producer put the same order on the bus twice: two EventBridge ids, one order.
      expect(await handler(orderPlaced(detail), lambdaContext(30_000))).toEqual({ shipped: detail.orderId, amount: 7 })
      await expect(handler(orderPlaced({ ...detail, amount: 8 }), lambdaContext(30_000))).rejects.toBeInstanceOf(FingerprintMismatchError)
      expect(runs).toHaveLength(1)
    })

    it('a timeout mid-function: at the remaining time less marginMs the key is let go and the invocation fails; the retry runs once', async () => {
      const { runs, fn } = shipping(0, forever)
      const { fn: finish } = shipping()
      const event = orderPlaced({ orderId: randomUUID(), amount: 42 })
      let stalled = true
      const handler = makeIdempotent((e: OrderEvent, c: Context, tx: Tx) => (stalled ? fn(e, c, tx) : finish(e, c, tx)), { idem: backend().idem, marginMs: 300 })
      // Lambda gave this invocation 800 ms; idem keeps 300 back, so the function has 500.
      await expect(handler(event, lambdaContext(800))).rejects.toBeInstanceOf(OverranError)
      stalled = false
      const retry = makeIdempotent(finish, { idem: backend().idem, waitMs: 5_000 })
      expect(await retry(event, lambdaContext(30_000))).toEqual({ shipped: event.detail.orderId, amount: 42 })
      expect(runs).toHaveLength(1)
      // Rolled back with the key (Postgres), or saved as a step the retry resumed after (leased): once.
      expect(await backend().count(event.detail.orderId)).toBe(1)
      expect(await retry(event, lambdaContext(30_000))).toEqual({ shipped: event.detail.orderId, amount: 42 })
      expect(await backend().count(event.detail.orderId)).toBe(1)
    })

    it('a timeout before any effect frees the key at once: the retry is not stuck behind it', async () => {
      const event = orderPlaced({ orderId: randomUUID(), amount: 1 })
      const stuck = makeIdempotent(async () => forever(), { idem: backend().idem, marginMs: 300 })
      await expect(stuck(event, lambdaContext(700))).rejects.toBeInstanceOf(OverranError)
      const { runs, fn } = shipping()
      const retry = makeIdempotent(fn, { idem: backend().idem, waitMs: backend().retryWaitMs })
      expect(await retry(event, lambdaContext(30_000))).toEqual({ shipped: event.detail.orderId, amount: 1 })
      expect(runs).toEqual([event.id])
    })

    it('an invocation with no more time than the margin claims nothing and fails; the retry runs', async () => {
      const { runs, fn } = shipping()
      const handler = makeIdempotent(fn, { idem: backend().idem, marginMs: 5_000 })
      const event = orderPlaced({ orderId: randomUUID(), amount: 3 })
      await expect(handler(event, lambdaContext(2_000))).rejects.toBeInstanceOf(OverranError)
      expect(runs).toEqual([])
      expect(await handler(event, lambdaContext(30_000))).toEqual({ shipped: event.detail.orderId, amount: 3 })
    })

    it('a function that throws frees the key: the retry runs again', async () => {
      const event = orderPlaced({ orderId: randomUUID(), amount: 5 })
      let fail = true
      const { runs, fn } = shipping()
      const handler = makeIdempotent(
        async (e: OrderEvent, c: Context, tx: Tx) => {
          if (fail) throw new Error('carrier down')
          return fn(e, c, tx)
        },
        { idem: backend().idem },
      )
      await expect(handler(event, lambdaContext(30_000))).rejects.toThrow('carrier down')
      fail = false
      expect(await handler(event, lambdaContext(30_000))).toEqual({ shipped: event.detail.orderId, amount: 5 })
      expect(runs).toHaveLength(1)
    })

    it('an SNS notification is keyed by its message id; an event with no key is MissingKeyError', async () => {
      const runs: string[] = []
      const handler = makeIdempotent(
        async (event: { Records: Array<{ Sns: { Message: string } }> }, _context: Context, tx: Tx) => {
          const order = JSON.parse(event.Records[0]!.Sns.Message) as OrderPlaced
          runs.push(order.orderId)
          await backend().effect(tx, order.orderId)
          return order.orderId
        },
        { idem: backend().idem },
      )
      const notification = snsNotification({ orderId: randomUUID(), amount: 9 })
      const results = await Promise.all([handler(notification, lambdaContext(30_000)), handler(notification, lambdaContext(30_000))])
      expect(new Set(results).size).toBe(1)
      expect(runs).toHaveLength(1)
      const anyEvent = makeIdempotent(async () => 1, { idem: backend().idem })
      await expect(anyEvent({ orderId: 'o-1' }, lambdaContext(30_000))).rejects.toBeInstanceOf(MissingKeyError)
    })
  })

  middyScenarios(name, backend)

  describe(`${name}: makeSqsBatchHandler`, () => {
    /** A batch of `n` orders; `poison` of them fail every time. */
    function batch(n: number, options: { fifo?: boolean } = {}) {
      const orders = Array.from({ length: n }, () => ({ orderId: randomUUID(), amount: 1 }))
      const event: SQSEvent = { Records: orders.map((order) => sqsRecord(order, options)) }
      return { orders, event }
    }

    function recorder(poison: ReadonlySet<string> = new Set()) {
      const runs: string[] = []
      const handler = async (tx: InboxTx, message: { body: unknown; record: { messageId: string } }) => {
        const { orderId } = message.body as OrderPlaced
        runs.push(orderId)
        if (poison.has(orderId)) throw new Error(`order ${orderId} is malformed`)
        await backend().recordEffect(tx, orderId)
      }
      return { runs, handler }
    }

    it('one poison record: exactly that record is reported in batchItemFailures; a redelivered batch runs no record twice', async () => {
      const { orders, event } = batch(6)
      const poison = orders[2]!.orderId
      const { runs, handler } = recorder(new Set([poison]))
      const consume = makeSqsBatchHandler(handler, { inbox: backend().inbox(3) })
      expect(await consume(event, lambdaContext(30_000))).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[2]!.messageId }] })
      for (const order of orders) expect(await backend().count(order.orderId)).toBe(order.orderId === poison ? 0 : 1)

      // Lambda failed to delete the batch (or SQS delivered it again): the five run no more.
      const again = redelivered(event)
      expect(await consume(again, lambdaContext(30_000))).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[2]!.messageId }] })
      expect(runs.filter((id) => id !== poison)).toHaveLength(5)
      // The poison record's third failure makes it a dead letter: done, so SQS deletes it.
      expect(await consume(redelivered(again), lambdaContext(30_000))).toEqual({ batchItemFailures: [] })
      expect(runs.filter((id) => id === poison)).toHaveLength(3)
      for (const order of orders) expect(await backend().count(order.orderId)).toBe(order.orderId === poison ? 0 : 1)
    })

    it('the same batch in two invocations at once (at-least-once delivery): each record applied once', async () => {
      const { orders, event } = batch(8)
      const { runs, handler } = recorder()
      const consume = makeSqsBatchHandler(handler, { inbox: backend().inbox(), concurrency: 4 })
      const [first, second] = await Promise.all([consume(event, lambdaContext(30_000)), consume(redelivered(event), lambdaContext(30_000))])
      // A record one invocation found in flight is reported failed by it, and comes back as a duplicate.
      const failed = [...first.batchItemFailures, ...second.batchItemFailures].map((failure) => failure.itemIdentifier)
      const retried = await consume({ Records: redelivered(event).Records.filter((record) => failed.includes(record.messageId)) }, lambdaContext(30_000))
      expect(retried).toEqual({ batchItemFailures: [] })
      expect(runs.toSorted()).toEqual(orders.map((order) => order.orderId).toSorted())
      for (const order of orders) expect(await backend().count(order.orderId)).toBe(1)
    })

    it('ids from a message attribute: a producer resending an order under a new message id is a duplicate', async () => {
      const { runs, handler } = recorder()
      const consume = makeSqsBatchHandler(handler, { inbox: backend().inbox(), idAttribute: 'order-id' })
      const order = { orderId: randomUUID(), amount: 3 }
      const attributes = { 'order-id': { stringValue: order.orderId, dataType: 'String' } }
      const first = sqsRecord(order, { attributes })
      const resent = sqsRecord(order, { attributes })
      expect(await consume({ Records: [first] }, lambdaContext(30_000))).toEqual({ batchItemFailures: [] })
      expect(await consume({ Records: [resent] }, lambdaContext(30_000))).toEqual({ batchItemFailures: [] })
      expect(runs).toEqual([order.orderId])
      expect(await backend().count(order.orderId)).toBe(1)
    })

    it('a record that overruns the invocation is rolled back and reported, with the records not started; the redelivery runs each once', async () => {
      const { orders, event } = batch(3)
      let stall: string | undefined = orders[1]!.orderId
      const runs: string[] = []
      const consume = makeSqsBatchHandler(
        async (tx: InboxTx, message) => {
          const { orderId } = message.body as OrderPlaced
          runs.push(orderId)
          await backend().recordEffect(tx, orderId)
          if (orderId === stall) await forever()
        },
        { inbox: backend().inbox(), marginMs: 300 },
      )
      const ids = event.Records.map((record) => record.messageId)
      expect(await consume(event, lambdaContext(1_000))).toEqual({ batchItemFailures: [{ itemIdentifier: ids[1] }, { itemIdentifier: ids[2] }] })
      expect(runs).toEqual([orders[0]!.orderId, orders[1]!.orderId])
      stall = undefined
      expect(await consume(redelivered(event), lambdaContext(30_000))).toEqual({ batchItemFailures: [] })
      expect(runs).toEqual([orders[0]!.orderId, orders[1]!.orderId, orders[1]!.orderId, orders[2]!.orderId])
      for (const order of orders) expect(await backend().count(order.orderId)).toBe(1)
    })

    it('a FIFO batch stops at its first failure: the rest are reported without running, so their order holds', async () => {
      const { orders, event } = batch(4, { fifo: true })
      const { runs, handler } = recorder(new Set([orders[1]!.orderId]))
      const consume = makeSqsBatchHandler(handler, { inbox: backend().inbox(), concurrency: 4 })
      const ids = event.Records.map((record) => record.messageId)
      expect(await consume(event, lambdaContext(30_000))).toEqual({ batchItemFailures: ids.slice(1).map((itemIdentifier) => ({ itemIdentifier })) })
      expect(runs).toEqual([orders[0]!.orderId, orders[1]!.orderId])
    })
  })

  describe(`${name}: makeHttpHandler (a Function URL, payload 2.0)`, () => {
    /** A function that takes an order: one effect per order id, 201 with the order and a session cookie. */
    function orders(stall?: () => Promise<never>) {
      const runs: string[] = []
      const handler = makeHttpHandler(
        async (event: APIGatewayProxyEventV2, _context, idem) => {
          const order = JSON.parse(event.body ?? '{}') as OrderPlaced
          runs.push(order.orderId)
          await backend().effect(idem!.tx, order.orderId)
          if (stall !== undefined) await stall()
          return { statusCode: 201, headers: { 'content-type': 'application/json', location: `/orders/${order.orderId}` }, cookies: ['session=s1; HttpOnly'], body: JSON.stringify(order) }
        },
        { idem: backend().idem, scope: (event) => event.requestContext.accountId, waitMs: 10_000, marginMs: 300 },
      )
      return { runs, handler }
    }
    const headerOf = (result: unknown, name: string) => (result as { headers?: Record<string, unknown> }).headers?.[name]

    it('20 concurrent invocations with one key: the function runs once; the others replay its status, allowed headers and body', async () => {
      const { runs, handler } = orders()
      const order = { orderId: randomUUID(), amount: 5 }
      const results = await Promise.all(Array.from({ length: 20 }, () => handler(httpApiRequest({ key: `"k-${order.orderId}"`, body: JSON.stringify(order) }), lambdaContext(30_000))))
      expect(runs).toEqual([order.orderId])
      expect(results.map((result) => (result as { statusCode: number }).statusCode)).toEqual(Array.from({ length: 20 }, () => 201))
      expect(results.filter((result) => headerOf(result, 'idempotent-replayed') === 'true')).toHaveLength(19)
      for (const result of results) expect((result as { body: string }).body).toBe(JSON.stringify(order))
      // Set-Cookie is not replayed unless replayHeaders names it (DESIGN "Replay").
      expect(results.filter((result) => (result as { cookies?: string[] }).cookies !== undefined)).toHaveLength(1)
      expect(await backend().count(order.orderId)).toBe(1)
    })

    it('another body under the key is 422 problem+json, no key is 400, in the function URL format', async () => {
      const { runs, handler } = orders()
      const order = { orderId: randomUUID(), amount: 5 }
      const key = `"k-${order.orderId}"`
      await handler(httpApiRequest({ key, body: JSON.stringify(order) }), lambdaContext(30_000))
      const mismatch = await handler(httpApiRequest({ key, body: JSON.stringify({ ...order, amount: 6 }) }), lambdaContext(30_000))
      expect(mismatch).toMatchObject({ statusCode: 422, headers: { 'content-type': 'application/problem+json' }, isBase64Encoded: false })
      expect(JSON.parse((mismatch as { body: string }).body)).toMatchObject({ status: 422, code: 'fingerprint-mismatch' })
      expect(await handler(httpApiRequest({ body: JSON.stringify(order) }), lambdaContext(30_000))).toMatchObject({ statusCode: 400 })
      expect(runs).toHaveLength(1)
    })

    it('a timeout mid-function answers 503 overran and lets the key go; the retry runs once', async () => {
      const order = { orderId: randomUUID(), amount: 5 }
      const key = `"k-${order.orderId}"`
      const stuck = orders(forever)
      const answer = await stuck.handler(httpApiRequest({ key, body: JSON.stringify(order) }), lambdaContext(800))
      expect(answer).toMatchObject({ statusCode: 503, headers: { 'retry-after': '1' } })
      expect(JSON.parse((answer as { body: string }).body)).toMatchObject({ code: 'overran' })
      const { runs, handler } = orders()
      expect(await handler(httpApiRequest({ key, body: JSON.stringify(order) }), lambdaContext(30_000))).toMatchObject({ statusCode: 201 })
      expect(runs).toEqual([order.orderId])
      expect(await backend().count(order.orderId)).toBe(1)
    })

    it('binary bodies in base64 both ways: the replay answers the same bytes', async () => {
      const image = Uint8Array.from({ length: 256 }, (_, i) => i)
      let runs = 0
      const handler = makeHttpHandler(
        async (event: APIGatewayProxyEventV2) => {
          runs++
          const received = Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8')
          return { statusCode: 201, headers: { 'content-type': 'image/png' }, body: Buffer.from(received).reverse().toString('base64'), isBase64Encoded: true }
        },
        { idem: backend().idem, scope: (event) => event.requestContext.accountId },
      )
      const request = httpApiRequest({ key: `"${randomUUID()}"`, body: image, contentType: 'image/png' })
      const first = await handler(request, lambdaContext(30_000))
      const replay = await handler(request, lambdaContext(30_000))
      expect(runs).toBe(1)
      expect(replay).toMatchObject({ statusCode: 201, isBase64Encoded: true, body: (first as { body: string }).body, headers: { 'content-type': 'image/png', 'idempotent-replayed': 'true' } })
      expect([...Buffer.from((replay as { body: string }).body, 'base64')]).toEqual([...image].reverse())
    })
  })

  describe(`${name}: a duplicate invocation that outwaits its time`, () => {
    it('a duplicate never waits past its own deadline: it fails InFlightError (its retry replays)', async () => {
      const event = orderPlaced({ orderId: randomUUID(), amount: 1 })
      let release!: () => void
      const gate = new Promise<void>((resolve) => (release = resolve))
      let started!: () => void
      const running = new Promise<void>((resolve) => (started = resolve))
      const slow = makeIdempotent(async () => {
        started()
        await gate
        return 'done'
      }, { idem: backend().idem })
      const first = slow(event, lambdaContext(30_000))
      // The first holds the key once its function runs.
      await running
      // The first finishes 2.5 s from now: a duplicate waiting the engine's 5 s would replay it.
      const later = setTimeout(release, 2_500)
      await expect(slow(event, lambdaContext(1_500))).rejects.toBeInstanceOf(InFlightError)
      clearTimeout(later)
      release()
      expect(await first).toBe('done')
      expect(await slow(event, lambdaContext(30_000))).toBe('done')
    })
  })
}
