import type { Context } from 'aws-lambda'
import type { RunResult } from '../core/engine.js'
import { lambdaCalls, type MakeIdempotentOptions } from './make-idempotent.js'

/** What a handler behind `middyIdempotent` finds on its context: the engine's transaction or step context, and the key. */
export interface IdemContext<Tx> extends Context {
  readonly idem: {
    /** The transaction (`createIdem`) or step context (`createLeasedIdem`) the handler's effects go through. */
    readonly tx: Tx
    /** The key the invocation holds, as stored. */
    readonly key: string
    /** The scope it is stored under. */
    readonly scope: string
  }
}

/** The parts of a Middy request (`@middy/core` 6) the middleware reads and sets. */
export interface MiddyRequest<Event> {
  event: Event
  context: Context
  response: unknown
  error: unknown
  /**
   * Set by `before` to answer at once (a replay): Middy 6 then runs no other middleware
   * (no later `before`, no `after`, no `onError`) and not the handler.
   */
  earlyResponse?: unknown
}

/** A Middy middleware object (`middy(handler).use(...)`), typed by the shape Middy calls. */
export interface MiddyIdempotency<Event> {
  /** Claims the key; a replay answers at once with the stored result. */
  before(request: MiddyRequest<Event>): Promise<void>
  /** Stores the response with the key, as the handler and the `after` middlewares that ran before this one made it, and answers with its stored JSON form. */
  after(request: MiddyRequest<Event>): Promise<void>
  /** Frees the key (rolls back, or releases the lease), so the retry runs again; the error stays the handler's. */
  onError(request: MiddyRequest<Event>): Promise<void>
}

/** An invocation whose handler runs inside the engine's call, between `before` and `after`. */
interface Held {
  readonly running: Promise<RunResult<unknown>>
  settle(outcome: { readonly value: unknown } | { readonly error: unknown }): void
}

/**
 * The Middy middleware of `makeIdempotent` (`@middy/core` 6 runs on Node 20), with the
 * same options and behaviour: the handler runs inside the engine's call, its transaction
 * or step context on `context.idem.tx`; an error (the handler's or a middleware's) frees
 * the key; the invocation's remaining time bounds the call.
 *
 * Use it first (the first `.use()`). Middy runs `after` middlewares in reverse order, so
 * its `after` runs last and stores the response as the whole stack made it: the headers
 * a CORS middleware added, the body a serializer wrote. A repeated event is answered
 * from its `before` with that stored response, and Middy 6 runs nothing else for it (no
 * other middleware, not the handler): the replay is the first answer, the same status,
 * headers and body. What a middleware would have made differently for the repeat (an
 * `Access-Control-Allow-Origin` echoing another origin, a header naming this
 * invocation) is the first invocation's. Its `before` runs first too: `key` and `input`
 * read the event as Lambda delivered it (a JSON body is still text), before any parser.
 *
 * @throws InvalidOptionError naming the option, at creation
 * @example
 * export const handler = middy(async (event: EventBridgeEvent<'Order Placed', { orderId: string }>, context: IdemContext<StepContext>) => {
 *   const label = await context.idem.tx.step('label', () => carrier.createLabel(event.detail.orderId))
 *   return { label }
 * })
 *   .use(middyIdempotent({ store: dynamodbStore({ client: new DynamoDBClient({}), table: 'idem' }) })) // first
 *   .use(eventNormalizer()) // then the others
 * @see docs/lambda.md
 */
export function middyIdempotent<Event, Tx>(options: MakeIdempotentOptions<Event, Tx>): MiddyIdempotency<Event> {
  const { engine, callFor } = lambdaCalls('middyIdempotent', options)
  const held = new WeakMap<MiddyRequest<Event>, Held>()
  return {
    async before(request) {
      const call = callFor(request.event, request.context)
      let claimed!: (tx: Tx) => void
      const started = new Promise<Tx>((resolve) => (claimed = resolve))
      let settle!: Held['settle']
      const outcome = new Promise<unknown>((resolve, reject) => {
        settle = (result) => ('error' in result ? reject(result.error) : resolve(result.value))
      })
      const running = engine.run<unknown>(call, (tx) => {
        claimed(tx)
        return outcome
      })
      // Read in `after` or `onError`; until then a deadline's rejection must not go unhandled.
      running.catch(() => {})
      const first = await Promise.race([started.then((tx) => ({ tx })), running.then((result) => ({ result }))])
      if ('result' in first) {
        request.earlyResponse = first.result.value
        return
      }
      const idem = { tx: first.tx, key: call.key, scope: call.scope }
      Object.assign(request.context, { idem })
      held.set(request, { running, settle })
    },
    async after(request) {
      const call = held.get(request)
      if (call === undefined) return
      held.delete(request)
      call.settle({ value: request.response })
      request.response = (await call.running).value
    },
    async onError(request) {
      const call = held.get(request)
      if (call === undefined) return
      held.delete(request)
      call.settle({ error: request.error })
      // The engine rolls back or releases; Middy then throws the handler's error.
      await call.running.catch(() => {})
    },
  }
}
