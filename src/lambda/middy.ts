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
  /** Set by `before` to answer at once (a replay): Middy skips the handler and the `after` middlewares. */
  earlyResponse?: unknown
}

/** A Middy middleware object (`middy(handler).use(...)`), typed by the shape Middy calls. */
export interface MiddyIdempotency<Event> {
  /** Claims the key; a replay answers at once with the stored result. */
  before(request: MiddyRequest<Event>): Promise<void>
  /** Stores the handler's result with the key and answers with its stored JSON form. */
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
 * same options and behaviour: a repeated event is answered with the stored result
 * without running the handler or the `after` middlewares; the handler runs inside the
 * engine's call, its transaction or step context on `context.idem.tx`; an error frees
 * the key; the invocation's remaining time bounds the call. Use it last (`.use()` after
 * the others): Middy runs its `before` after theirs (a body parser has shaped the event
 * the key comes from) and its `after` before theirs, so it stores what the handler
 * returned. A replay is answered from `before`, and Middy runs no `after` middleware for
 * it: the stored result is answered as the handler returned it.
 *
 * @throws InvalidOptionError naming the option, at creation
 * @example
 * export const handler = middy(async (event: EventBridgeEvent<'Order Placed', { orderId: string }>, context: IdemContext<StepContext>) => {
 *   const label = await context.idem.tx.step('label', () => carrier.createLabel(event.detail.orderId))
 *   return { label }
 * }).use(middyIdempotent({ store: dynamodbStore({ client: new DynamoDBClient({}), table: 'idem' }) }))
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
