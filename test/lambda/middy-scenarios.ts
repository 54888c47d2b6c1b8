// middyIdempotent under @middy/core 6, one body for every backend (called from
// scenarios.ts): the order the docs give (idem's middleware first) driven through Middy
// itself, with middlewares shaped as Middy's own are: a JSON body parser's `before`, a
// CORS `after` that echoes the request's origin, a serializer's `after`.
import middy from '@middy/core'
import type { APIGatewayProxyEventV2, Context, EventBridgeEvent } from 'aws-lambda'
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { FingerprintMismatchError } from '../../src/core/errors/index.js'
import { middyIdempotent, type IdemContext } from '../../src/lambda/index.js'
import type { LambdaBackend } from './scenarios.js'
import { forever, httpApiRequest, lambdaContext, orderPlaced, sleep, type OrderPlaced } from './support.js'

type OrderEvent = EventBridgeEvent<'Order Placed', OrderPlaced>

/** What the handler answers and the middlewares shape: a body that the serializer turns into text. */
interface Answer {
  statusCode: number
  headers?: Record<string, string>
  body: unknown
}

/** A request to the HTTP API as the handler sees it: its body as the parser left it. */
type ParsedRequest = Omit<APIGatewayProxyEventV2, 'body'> & { body?: unknown }

function isOrder(body: unknown): body is OrderPlaced {
  return typeof body === 'object' && body !== null && 'orderId' in body && typeof body.orderId === 'string'
}

/** A request to the HTTP API from `origin`; after the body parser its body is the parsed JSON. */
function orderRequest(order: OrderPlaced, key: string, origin: string, body = JSON.stringify(order)): APIGatewayProxyEventV2 {
  const event = httpApiRequest({ key, body })
  return { ...event, headers: { ...event.headers, origin } }
}

/** As @middy/http-json-body-parser 6: parses a JSON body in `before`; malformed JSON is a 422 error. */
const jsonBodyParser = {
  before: async (request: { event: { body?: unknown } }) => {
    try {
      request.event.body = JSON.parse(String(request.event.body))
    } catch (cause) {
      throw Object.assign(new Error('Invalid or malformed JSON was provided', { cause }), { statusCode: 422 })
    }
  },
}

/** As @middy/http-cors 6 with an allow-list: echoes the request's origin in `after`. */
function cors(runs: string[]) {
  return {
    after: async (request: { event: ParsedRequest; response: Answer | null }) => {
      runs.push('cors')
      const origin = request.event.headers.origin ?? '*'
      request.response = { ...request.response!, headers: { ...request.response!.headers, 'access-control-allow-origin': origin, vary: 'Origin' } }
    },
  }
}

/** As @middy/http-response-serializer 6 for JSON: writes the body as text and says so in `after`. */
const serializer = {
  after: async (request: { response: Answer | null }) => {
    const response = request.response!
    request.response = { ...response, headers: { ...response.headers, 'content-type': 'application/json' }, body: JSON.stringify(response.body) }
  },
}

export function middyScenarios<Tx, InboxTx>(name: string, backend: () => LambdaBackend<Tx, InboxTx>): void {
  describe(`${name}: middyIdempotent (@middy/core 6)`, () => {
    it('used first: concurrent invocations run the handler once; replays run nothing else and answer what the stack answered; an error frees the key', async () => {
      const runs: string[] = []
      let fail = false
      const afterCalls: unknown[] = []
      const handler = middy(async (event: OrderEvent, context: Context) => {
        const { idem } = context as IdemContext<Tx>
        if (fail) throw new Error('carrier down')
        runs.push(idem.key)
        await backend().effect(idem.tx, event.detail.orderId)
        await sleep(100)
        return { shipped: event.detail.orderId }
      })
        .use(middyIdempotent({ idem: backend().idem }))
        .use({
          after: async (request) => {
            afterCalls.push(request.response)
            request.response = { ...request.response, label: 'printed' }
          },
        })
      const event = orderPlaced({ orderId: randomUUID(), amount: 42 })
      const results = await Promise.all(Array.from({ length: 10 }, () => handler(event, lambdaContext(30_000))))
      expect(results).toEqual(Array.from({ length: 10 }, () => ({ shipped: event.detail.orderId, label: 'printed' })))
      expect(runs).toEqual([event.id])
      expect(afterCalls).toHaveLength(1)
      expect(await backend().count(event.detail.orderId)).toBe(1)

      await expect(handler(orderPlaced({ ...event.detail, amount: 1 }, event.id), lambdaContext(30_000))).rejects.toBeInstanceOf(FingerprintMismatchError)

      fail = true
      const other = orderPlaced({ orderId: randomUUID(), amount: 1 })
      await expect(handler(other, lambdaContext(30_000))).rejects.toThrow('carrier down')
      fail = false
      expect(await handler(other, lambdaContext(30_000))).toEqual({ shipped: other.detail.orderId, label: 'printed' })
      expect(runs).toEqual([event.id, other.id])
    })

    it('used first, before a body parser, CORS and a serializer: the replay carries the fresh answer’s headers and body, even for another origin; a malformed body frees the key', async () => {
      const runs: string[] = []
      const afters: string[] = []
      const handler = middy(async (event: ParsedRequest, context: Context): Promise<Answer> => {
        const { idem } = context as IdemContext<Tx>
        if (!isOrder(event.body)) throw new Error('the body parser did not run')
        runs.push(event.body.orderId)
        await backend().effect(idem.tx, event.body.orderId)
        return { statusCode: 201, body: { accepted: event.body.orderId } }
      })
        .use(middyIdempotent({ idem: backend().idem, key: (event: ParsedRequest) => event.headers['idempotency-key'], input: (event) => event.body }))
        .use(jsonBodyParser)
        .use(cors(afters))
        .use(serializer)
      const order = { orderId: randomUUID(), amount: 3 }
      const key = randomUUID()

      const fresh = await handler(orderRequest(order, key, 'https://shop.example'), lambdaContext(30_000))
      expect(fresh).toEqual({
        statusCode: 201,
        headers: { 'access-control-allow-origin': 'https://shop.example', vary: 'Origin', 'content-type': 'application/json' },
        body: JSON.stringify({ accepted: order.orderId }),
      })
      const replay = await handler(orderRequest(order, key, 'https://shop.example'), lambdaContext(30_000))
      expect(replay).toEqual(fresh)
      // What CORS would have made of another origin's repeat is not made: the replay is the first answer.
      expect(await handler(orderRequest(order, key, 'https://admin.example'), lambdaContext(30_000))).toEqual(fresh)
      expect(runs).toEqual([order.orderId])
      expect(afters).toEqual(['cors'])
      expect(await backend().count(order.orderId)).toBe(1)

      // The parser's `before` runs after the claim: its error frees the key, and the corrected retry runs.
      const late = { orderId: randomUUID(), amount: 4 }
      const lateKey = randomUUID()
      await expect(handler(orderRequest(late, lateKey, 'https://shop.example', '{"orderId":'), lambdaContext(30_000))).rejects.toThrow('malformed JSON')
      expect(await handler(orderRequest(late, lateKey, 'https://shop.example'), lambdaContext(30_000))).toMatchObject({ statusCode: 201 })
      expect(runs).toEqual([order.orderId, late.orderId])
      expect(await backend().count(late.orderId)).toBe(1)
    })

    it('a timeout mid-handler lets the key go; the retry runs once', async () => {
      const runs: string[] = []
      let stall = true
      const handler = middy(async (event: OrderEvent, context: Context) => {
        const { idem } = context as IdemContext<Tx>
        runs.push(event.id)
        if (stall) await forever()
        await backend().effect(idem.tx, event.detail.orderId)
        return 'shipped'
      }, { timeoutEarlyInMillis: 0 }).use(middyIdempotent({ idem: backend().idem, marginMs: 300, waitMs: backend().retryWaitMs }))
      const event = orderPlaced({ orderId: randomUUID(), amount: 2 })
      const stuck = handler(event, lambdaContext(700))
      // Lambda would stop the invocation here; idem let the key go at its deadline (400 ms
      // in), then released it in the store: 1.5 s leaves a slow machine more than a second
      // for that round trip. (The stuck invocation never settles: middy awaits its handler.)
      await sleep(1_500)
      stall = false
      expect(await handler(event, lambdaContext(30_000))).toBe('shipped')
      expect(runs).toHaveLength(2)
      expect(await backend().count(event.detail.orderId)).toBe(1)
      void stuck.catch(() => {})
    })
  })
}
