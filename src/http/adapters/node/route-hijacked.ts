import { IdemError } from '../../../core/errors/idem-error.js'

declare module '../../../core/errors/idem-error.js' {
  interface IdemErrorCodes {
    /** The HTTP front end's own: a protected route took its reply over (Fastify's `reply.hijack()`, Koa's `ctx.respond = false`; `RouteHijackedError`). */
    'route-hijacked': true
  }
}

/**
 * A protected route took its reply over: Fastify's `reply.hijack()`, or Koa's
 * `ctx.respond = false`. A reply taken over bypasses where idem holds the route's answer
 * (Fastify's hooks, Koa's context), so idem could neither store it with the route's
 * effects nor keep it from the client until they commit: the call is refused (thrown
 * from `hijack()`, from the assignment), the transaction rolled back and the client
 * answered 500.
 */
export class RouteHijackedError extends IdemError {
  override readonly name = 'RouteHijackedError'
  readonly code = 'route-hijacked' as const
}
