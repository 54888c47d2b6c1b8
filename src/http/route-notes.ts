/**
 * What the middleware tells the log (the `warning` events, `warn`) about the routes it
 * protects: a route that overran its deadline, hijacked its reply, failed after it
 * answered, or answered with what its stored form leaves out. None of it is on the path
 * of a request that goes as expected.
 */
import { warn } from '../core/events.js'
import type { AfterAnswer, HttpRequest } from './exchange.js'
import type { ResolvedOptions } from './resolved-options.js'

/** The notes of one middleware: each says what happened, when it happens (or once, where it says so). */
export interface RouteNotes {
  /** A route held its key past the deadline: the event and the log name it, every time. */
  overran(status: number, request: HttpRequest, deadlineMs: number): void
  /** A route that cannot be protected as written: the log names it, every time. */
  hijacked(message: string): void
  /** A response body left out of its stored form, once per middleware: every later replay of such a response has an empty body. */
  omitted(bytes: number): void
  /** A header field left out of a stored form, once per name: every later reply with it is stored without it. */
  leftOut(name: string, reason: string): void
  /** A route failed after it answered with `status`: its answer stands, and the log says what failed. */
  answeredThenFailed(request: HttpRequest, status: number, after: AfterAnswer): void
}

/**
 * The notes of a middleware with the resolved options `o`.
 * @example const notes = routeNotes(o); notes.hijacked(error.message)
 */
export function routeNotes<Tx, Native>(o: ResolvedOptions<Tx, Native>): RouteNotes {
  const { events } = o
  let omittedBefore = false
  const leftOutBefore = new Set<string>()
  return {
    overran(status, request, deadlineMs) {
      const { path } = request
      if (events.listening) events.emit({ type: 'http', outcome: 'overran', method: request.method, status, path })
      warn(events, {
        code: 'route-overran',
        source: 'idempotency',
        message:
          `idem: ${request.method} ${path} still ran ${deadlineMs} ms after it took its Idempotency-Key (deadlineMs), so its transaction was ` +
          'rolled back (or its lease let go), the key freed and the client answered 503; a route that never answers has lost an error (on Express 4, pass async errors to next(err))',
      })
    },
    hijacked: (message) => warn(events, { code: 'route-hijacked', source: 'idempotency', message }),
    omitted(bytes) {
      if (omittedBefore) return
      omittedBefore = true
      warn(events, { code: 'stored-body-omitted', source: 'idempotency', message: omittedMessage(o, bytes) })
    },
    leftOut(name, reason) {
      if (leftOutBefore.has(name)) return
      leftOutBefore.add(name)
      warn(events, {
        code: 'header-not-stored',
        source: 'idempotency',
        message: `idem: a response's ${JSON.stringify(name)} header was left out of its stored form, as ${reason}: replays of such a response go without it.`,
      })
    },
    answeredThenFailed: (request, status, after) => answeredThenFailed(o, request, status, after),
  }
}

function omittedMessage<Tx, Native>(o: ResolvedOptions<Tx, Native>, bytes: number): string {
  const why =
    bytes > o.maxStoredBodyBytes
      ? `is over maxStoredBodyBytes (${o.maxStoredBodyBytes})`
      : `does not fit beside its headers in what the store holds (${o.limits.maxOutcomeBytes} bytes)`
  return (
    `idem: a response body of ${bytes} bytes ${why}, so it was stored without its body ` +
    'and its replays answer with an empty body and Idempotent-Body-Omitted: true. Raise maxStoredBodyBytes (up to what the store holds) to replay such bodies whole.'
  )
}

// The route's answer stands; what failed after it is told, with the error when it is known.
function answeredThenFailed<Tx, Native>(o: ResolvedOptions<Tx, Native>, request: HttpRequest, status: number, after: AfterAnswer): void {
  const what =
    'error' in after
      ? `then threw (${after.error instanceof Error ? after.error.message : String(after.error)})`
      : `then something answered again with ${after.secondAnswer} (an error handler after the route failed, or a second send)`
  const replay = o.storeStatus(status) ? 'stored with its effects, what a retry with the same key replays' : 'not stored (it rolls back), so a retry runs the route again'
  warn(o.events, {
    code: 'route-failed-after-answer',
    source: 'idempotency',
    message:
      `idem: ${request.method} ${request.path} answered ${status}, ${what}. Its ${status} stands: it is what the client gets and, ${replay}; ` +
      'no second answer was sent. Finish what can fail before answering, or catch it.',
    ...('error' in after ? { cause: after.error } : {}),
  })
}
