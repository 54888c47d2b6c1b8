import type { Context } from 'aws-lambda'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertDuration, assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import type { RouteReply } from '../http/exchange.js'
import { protectRequests } from '../http/handler.js'
import type { IdempotencyContext, IdempotencyOptions } from '../http/options.js'
import { bareValueJson, exchangeRequest, httpRequestOf, httpResponseOf, httpResultOf, neutralAnswer, type LambdaHttpEvent, type LambdaHttpFormat, type LambdaHttpResult } from './http-event.js'
import { DEFAULT_MARGIN_MS, remainingMs } from './invocation.js'

/**
 * A function behind API Gateway, a Function URL or an ALB: Lambda's handler with, as
 * third argument, the held key and its transaction (`idem.tx`), or `undefined` when the
 * request is not protected (another method or route, or no key where none is required).
 */
export type IdempotentHttpFunction<Event extends LambdaHttpEvent, Result, Tx> = (
  event: Event,
  context: Context,
  idem: IdempotencyContext<Tx> | undefined,
) => Promise<Result>

/**
 * The HTTP middleware's options (see `IdempotencyOptions` in `idem/fetch`; `scope` and
 * `routes` get the event), and the time kept back at the end of the invocation.
 */
export interface HttpHandlerOptions<Tx, Event extends LambdaHttpEvent = LambdaHttpEvent> extends IdempotencyOptions<Tx, Event> {
  /**
   * Time kept back from the route at the end of the invocation, for idem to let go of the
   * key and answer 503 before Lambda stops the invocation. The route's deadline is the
   * smaller of `deadlineMs` and `getRemainingTimeInMillis() - marginMs`.
   * @default 1000
   */
  marginMs?: number
}

const OPTIONS = optionNames<HttpHandlerOptions<unknown>>({
  store: true, idem: true, scope: true, methods: true, routes: true, required: true, strict: true, ttlMs: true, fields: true, storeStatus: true,
  replayHeaders: true, waitMs: true, deadlineMs: true, maxBodyBytes: true, maxStoredBodyBytes: true, onOutcome: true, events: true, problemTypes: true,
  marginMs: true,
})

/**
 * The Idempotency-Key middleware for functions behind API Gateway (REST APIs, payload
 * 1.0; HTTP APIs, 2.0), Function URLs and ALB targets, with the HTTP middleware's
 * semantics: a protected request (POST and PATCH by default) needs the header (400);
 * its method, path, query and body are its fingerprint, and another body under a used
 * key is 422; a duplicate of a request still running is 409 with `Retry-After`; a retry
 * gets the stored status, headers and body with `Idempotent-Replayed: true`, without
 * the function running; 5xx and transient 4xx are not stored. Answers go out in the
 * event's own format: a body as the function answered it (text as text, base64 with
 * `isBase64Encoded`), several `Set-Cookie` in `cookies` (2.0) or `multiValueHeaders`
 * (1.0, ALB); a bare value a 2.0 function returned (no `statusCode`) is returned again
 * as that value. The invocation's remaining time less `marginMs` bounds the route: past
 * it the key is let go and the answer is 503 (`overran`).
 *
 * @throws InvalidOptionError naming the option, at creation
 * @example
 * export const handler = makeHttpHandler(async (event: APIGatewayProxyEventV2, context, idem) => {
 *   const order = JSON.parse(event.body ?? '{}')
 *   await idem?.tx.query('INSERT INTO orders (id, amount) VALUES ($1, $2)', [order.id, order.amount])
 *   return { statusCode: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: order.id }) }
 * }, { store: postgresStore({ pool }), scope: (event) => event.requestContext.accountId })
 * @see docs/lambda.md
 */
export function makeHttpHandler<Tx, Result, Event extends LambdaHttpEvent = LambdaHttpEvent>(
  fn: IdempotentHttpFunction<Event, Result, Tx>,
  options: HttpHandlerOptions<Tx, Event>,
): (event: Event, context: Context) => Promise<Result | LambdaHttpResult> {
  const caller = 'makeHttpHandler'
  assertKnownOptions(caller, options, OPTIONS)
  const { marginMs = DEFAULT_MARGIN_MS, ...middleware } = options
  assertDuration(`${caller}: option "marginMs"`, marginMs, 0)
  if (typeof fn !== 'function') throw new InvalidOptionError(`${caller}: the function must be a function (event, context, idem) => result`)
  const protection = protectRequests<Tx, Event>(middleware)

  return async function httpHandler(event: Event, context: Context): Promise<Result | LambdaHttpResult> {
    const request = httpRequestOf(event)
    const left = remainingMs(context, marginMs)
    let passed: { result: Result } | undefined
    const outcome = await protection.protect(
      exchangeRequest(request),
      event,
      {
        pass: async () => {
          passed = { result: await fn(event, context, undefined) }
        },
        run: async (_body, idem) => routeReply(await fn(event, context, idem), request.format),
      },
      left === undefined ? undefined : { deadlineMs: left, waitMs: left },
    )
    if (outcome.kind === 'passed') return passed!.result
    if (outcome.kind === 'route') return outcome.response
    // A bare value is answered again as itself, through JSON as Lambda sends it: API
    // Gateway makes of it what it made of the first (only 2.0 takes one).
    const { value } = outcome.answer
    if (value !== undefined && request.format === 'api-gateway-v2') return value.json as Result
    return httpResultOf(neutralAnswer(outcome.answer), request)
  }
}

/**
 * The function's result as the middleware stores it, its body in the form it was
 * answered in (text, base64, or a bare value); the result itself is what a fresh
 * request is answered with.
 */
function routeReply<Result>(result: Result, format: LambdaHttpFormat): RouteReply<Result> {
  const json = bareValueJson(result, format)
  if (json !== undefined) {
    const headers = ['content-type', 'application/json']
    return { kind: 'reply', response: result, status: 200, body: json, form: 'value', headers: (names) => (names.has('content-type') ? headers : []) }
  }
  const response = httpResponseOf(result)
  return {
    kind: 'reply',
    response: result,
    status: response.status,
    body: response.body,
    form: typeof response.body === 'string' ? 'text' : 'base64',
    headers(names) {
      const list: string[] = []
      for (const [name, value] of response.headers) {
        const lower = name.toLowerCase()
        if (names.has(lower)) list.push(lower, value)
      }
      return list
    },
  }
}
