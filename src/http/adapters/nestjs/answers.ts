import type { ServerResponse } from 'node:http'
import type { ExecutionContext } from '@nestjs/common'
import type { HttpAnswer } from '../../exchange.js'
import { sendAnswer } from '../node/answer.js'
import { captureResponse } from '../node/response.js'

// Nest's own test for a handler that sends its response itself, so that Nest writes
// nothing after it (RouterExecutionContext.isResponseHandled): it takes `@Res()` or
// `@Next()` without `passthrough`. The metadata keys and parameter kinds are Nest's
// (ROUTE_ARGS_METADATA, RESPONSE_PASSTHROUGH_METADATA, RouteParamtypes), unchanged since Nest 6.
const ROUTE_ARGS = '__routeArguments__'
const PASSTHROUGH = '__responsePassthrough__'
const RESPONSE = 1
const NEXT = 2
const ownResponse = new WeakMap<object, boolean>()

export function sendsOwnResponse(context: ExecutionContext): boolean {
  const handler = context.getHandler()
  const known = ownResponse.get(handler)
  if (known !== undefined) return known
  const controller = context.getClass()
  const reflect = Reflect as unknown as { getMetadata?(key: string, target: object, property?: string): unknown }
  const args = (reflect.getMetadata?.(ROUTE_ARGS, controller, handler.name) ?? {}) as Record<string, unknown>
  const takesResponse = Object.keys(args).some((key) => {
    const type = Number(key.split(':')[0])
    return type === RESPONSE || type === NEXT
  })
  const passthrough = reflect.getMetadata?.(PASSTHROUGH, controller, handler.name) === true
  const result = takesResponse && !passthrough
  ownResponse.set(handler, result)
  return result
}

/**
 * Sends idem's own answer for a request whose route does not run (a replay, a problem)
 * in place of what Nest writes, and ends the interceptor's part with one value: Nest
 * takes the last value of every route's Observable, a route that sends its own response
 * (`handled`) included, and answers 500 when there is none. For such a route Nest then
 * writes nothing, so the answer goes at once; for any other Nest writes the value, which
 * is held and dropped, and the answer goes in its place.
 */
export function answerInstead(subscriber: { next(value: unknown): void; complete(): void }, res: ServerResponse, answer: HttpAnswer, earlier: readonly string[], handled: boolean): void {
  const write = (): void => {
    try {
      writeAnswer(res, answer, earlier)
    } catch {
      res.destroy()
    }
  }
  if (handled) write()
  else void captureResponse(res).then(write)
  subscriber.next(undefined)
  subscriber.complete()
}

/** Writes idem's answer with the headers that were there before the route, and no others. */
function writeAnswer(res: ServerResponse, answer: HttpAnswer, earlier: readonly string[]): void {
  for (const name of res.getHeaderNames()) res.removeHeader(name)
  for (let i = 0; i + 1 < earlier.length; i += 2) if (earlier[i] !== 'content-length') res.appendHeader(earlier[i]!, earlier[i + 1]!)
  sendAnswer(res, answer, false)
}
