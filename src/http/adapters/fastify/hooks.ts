/**
 * The hooks `idem/fastify` spreads the middleware over: Fastify has no middleware that
 * wraps the route. `preParsing` starts the middleware with the raw body (and either
 * answers at once or lets Fastify go on with the same bytes); `onSend` hands the
 * route's reply back to it and sends what it answers, and drops an answer sent after
 * the route's own; `onError` marks a route that threw so that the transaction rolls
 * back (or, after its answer, tells of it); `onRoute` wraps each handler to learn when
 * it settles. A protected route's `reply.hijack()` is refused. Mapping only: the
 * middleware (`handler.ts`) decides.
 */
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest, onErrorHookHandler, onRouteHookHandler, onSendHookHandler, preParsingHookHandler } from 'fastify'
import type { AfterAnswer, HttpRequest, Protected, RouteResult } from '../../exchange.js'
import { bufferOf, isWebResponse, routeReply, writeAnswer, writePayload, type Payload } from './reply.js'
import type { RequestProtection } from '../../handler.js'
import { nodeBody, nodeRequest, type NodeBody } from '../node/request.js'
import { captureResponse, release } from '../node/response.js'
import type { IdempotencyContext } from '../../options.js'
import { RouteHijackedError } from '../node/route-hijacked.js'

/** A protected request between `preParsing` and `onSend`. */
interface Held {
  /** The request as the middleware reads it: what a warning names. */
  readonly exchange: HttpRequest
  /** Hands the route's reply to the middleware (discarded: rolled back, not stored). */
  resolve(reply: RouteResult<Payload>): void
  reject(error: unknown): void
  /** The middleware's decision: the reply itself (stored), or an answer of its own. */
  decided: Promise<Protected<Payload>>
  /** The middleware has handed the request on (to the route, or unprotected). */
  started: boolean
  /** What the route threw, seen by `onError`. */
  error?: unknown
  /** The route's `reply.hijack()`, refused. */
  refused?: RouteHijackedError
  /** The client closed the connection before the reply was sent. */
  closed: boolean
  /** The route's handler (an async one) has settled. */
  handlerDone: boolean
}

/** A protected request whose route has answered (its reply reached `onSend`), until the middleware decides. */
interface Answered {
  readonly exchange: HttpRequest
  /** The status the route answered with. */
  readonly status: number
  /** Something failed after the answer, and was told: the answer's status and headers are put back. */
  told: boolean
}

/** The plugin's hooks, over one middleware. */
export interface ProtectionHooks {
  preParsing: preParsingHookHandler
  onRoute: onRouteHookHandler
  onError: onErrorHookHandler
  onSend: onSendHookHandler
}

// `Held.decided` until the middleware has returned its promise.
const UNSET: Promise<Protected<Payload>> = new Promise(() => {})

/** Makes the hooks of one plugin, over its middleware. */
export function protectionHooks<Tx>(protection: RequestProtection<Tx, FastifyRequest>): ProtectionHooks {
  const holds = new Holds(protection)
  return { preParsing: preParsingHook(holds), onRoute: onRouteHook(holds), onError: onErrorHook(holds), onSend: onSendHook(holds) }
}

/** The plugin's protected requests: those whose route runs under the key, and those whose route has answered. */
class Holds<Tx> {
  readonly held = new WeakMap<FastifyRequest, Held>()
  readonly answered = new WeakMap<FastifyRequest, Answered>()
  readonly refuseHijack: (this: FastifyReply) => FastifyReply

  constructor(readonly protection: RequestProtection<Tx, FastifyRequest>) {
    this.refuseHijack = refuseHijackOf(this)
  }

  startRoute(request: FastifyRequest, reply: FastifyReply, entry: Held, idem: IdempotencyContext<Tx>): void {
    entry.started = true
    this.held.set(request, entry)
    request.idem = idem
    reply.hijack = this.refuseHijack
    reply.raw.once('close', () => {
      entry.closed = true
      this.abandonIfUnanswered(request)
    })
  }

  // What idem answers itself, before the route (a replay, a problem), or for a route
  // still running past its deadline: a reply the route sends later is Fastify's to
  // refuse ("already sent").
  answerFor(request: FastifyRequest, reply: FastifyReply, entry: Held, outcome: Protected<Payload>, body: NodeBody): void {
    if (outcome.kind !== 'answer') return
    if (!entry.started) {
      const sent = writeAnswer(reply, outcome.answer, false)
      if (body.unfinished()) reply.header('connection', 'close')
      void reply.send(bufferOf(sent))
    } else if (this.held.get(request) === entry) {
      this.held.delete(request)
      release(reply.raw)
      void reply.send(bufferOf(writeAnswer(reply, outcome.answer, true)))
    }
  }

  // Once the route has answered, its answer stands: what fails after it is told, once.
  tell(after: Answered, what: AfterAnswer): void {
    if (after.told) return
    after.told = true
    this.protection.answeredThenFailed(after.exchange, after.status, what)
  }

  // The client went away and the route has finished without a reply reaching `onSend`:
  // roll back. Never earlier: the route may still be writing through the transaction,
  // and writes after a rollback would land outside it.
  abandonIfUnanswered(request: FastifyRequest): void {
    const entry = this.held.get(request)
    if (entry === undefined || !entry.closed || !entry.handlerDone) return
    this.held.delete(request)
    // Nobody is left to answer: roll back, and the retry runs again.
    entry.resolve({ kind: 'discard', response: { payload: null, status: 499, headers: [] }, status: 499 })
    entry.decided.catch(() => {})
  }
}

function preParsingHook<Tx>(holds: Holds<Tx>): preParsingHookHandler {
  return (request, reply, payload, hookDone) => {
    if (!holds.protection.covers(request.method)) return hookDone(null, payload)
    const body = nodeBody(payload)
    const exchange = nodeRequest(request.raw, request.url, body)
    // Filled in below; `onSend` reads `decided`, long after `protect` returned it.
    const entry: Held = { exchange, resolve: () => {}, reject: () => {}, decided: UNSET, started: false, closed: false, handlerDone: false }
    entry.decided = holds.protection.protect(exchange, request, {
      pass: async () => {
        entry.started = true
        hookDone(null, payload)
      },
      run: async (bytes, idem) => {
        const route = new Promise<RouteResult<Payload>>((resolve, reject) => Object.assign(entry, { resolve, reject }))
        holds.startRoute(request, reply, entry, idem)
        hookDone(null, Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]))
        return route
      },
    })
    entry.decided.then(
      (outcome) => holds.answerFor(request, reply, entry, outcome, body),
      (error: unknown) => {
        if (!entry.started) hookDone(error as Error)
      },
    )
  }
}

// Stands for `reply.hijack()` while idem holds the request: see RouteHijackedError.
function refuseHijackOf<Tx>(holds: Holds<Tx>): (this: FastifyReply) => FastifyReply {
  return function refuseHijack(this: FastifyReply): FastifyReply {
    const entry = holds.held.get(this.request)
    const exchange = entry?.exchange ?? holds.answered.get(this.request)?.exchange
    if (exchange === undefined) {
      // Its answer is sent: the reply is Fastify's again.
      Reflect.deleteProperty(this, 'hijack')
      return this.hijack()
    }
    const refused = new RouteHijackedError(
      `idem: ${exchange.method} ${exchange.path} called reply.hijack() while idem held its Idempotency-Key. A hijacked reply goes around ` +
        "Fastify's onSend, where idem holds the route's answer until its effects commit and stores it with them, so the call was refused: " +
        'the transaction rolled back, nothing was stored and the client was answered 500 route-hijacked. Answer through reply.send (a stream too), ' +
        'or leave the route unprotected (methods, routes, or a context without the plugin).',
    )
    if (entry !== undefined) {
      entry.refused = refused
      // What the route still writes on the raw response is held, and dropped.
      void captureResponse(this.raw)
    }
    throw refused
  }
}

// Wraps each route's handler to learn when an async one settles: if its client has
// gone, Fastify may then send nothing, and the held transaction must be ended.
function onRouteHook<Tx>(holds: Holds<Tx>): onRouteHookHandler {
  return (route) => {
    const handler = route.handler
    route.handler = function idemRoute(this: unknown, request, reply) {
      const result: unknown = handler.call(this as never, request, reply)
      if (holds.held.has(request) && isThenable(result)) {
        const settled = (): void => {
          const entry = holds.held.get(request)
          if (entry === undefined) return
          entry.handlerDone = true
          holds.abandonIfUnanswered(request)
        }
        result.then(settled, settled)
      }
      return result as ReturnType<typeof handler>
    }
  }
}

function onErrorHook<Tx>(holds: Holds<Tx>): onErrorHookHandler {
  return (request, _reply, error, hookDone) => {
    const after = holds.answered.get(request)
    if (after !== undefined) holds.tell(after, { error })
    else {
      const entry = holds.held.get(request)
      if (entry !== undefined) entry.error = error
    }
    hookDone()
  }
}

function onSendHook<Tx>(holds: Holds<Tx>): onSendHookHandler {
  return (request, reply, payload, hookDone) => {
    // A second answer, after the route's own: told, and never sent (its hook never ends).
    const after = holds.answered.get(request)
    if (after !== undefined) return holds.tell(after, { secondAnswer: reply.statusCode })
    const entry = holds.held.get(request)
    if (entry === undefined) return hookDone(null, payload)
    holds.held.delete(request)
    // What the route wrote on the raw response after its hijack was refused goes nowhere.
    release(reply.raw)
    const failure = entry.refused ?? entry.error
    if (failure !== undefined) {
      // The route threw (or hijacked): roll back, and let Fastify's error reply go out as it is, or idem's problem.
      entry.reject(failure)
      entry.decided.then(
        (outcome) => hookDone(null, outcome.kind === 'answer' ? writeAnswer(reply, outcome.answer, true) : payload),
        () => hookDone(null, payload),
      )
      return
    }
    const state: Answered = { exchange: entry.exchange, status: isWebResponse(payload) ? payload.status : reply.statusCode, told: false }
    holds.answered.set(request, state)
    routeReply(reply, payload).then(entry.resolve, entry.reject)
    entry.decided.then(
      (outcome) => {
        holds.answered.delete(request)
        hookDone(null, outcome.kind === 'answer' ? writeAnswer(reply, outcome.answer, true) : outcome.kind === 'route' ? writePayload(reply, outcome.response, state.told) : payload)
      },
      (error: unknown) => {
        holds.answered.delete(request)
        hookDone(error as Error)
      },
    )
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function'
}
