/**
 * `idem/openapi/hono`: a route helper for `@hono/zod-openapi` that protects a route with
 * the Idempotency-Key middleware of `idem/hono` and describes idem's contract in the
 * route's own OpenAPI description. `@hono/zod-openapi` itself is not imported.
 */
import type { Context, MiddlewareHandler } from 'hono'
import { InvalidOptionError } from '../../../core/errors/invalid-option.js'
import { idempotency } from '../../hono.js'
import type { IdempotencyOptions } from '../../options.js'
import { describeIdempotency, type OpenApiOptions } from './document.js'
import { routesReach, type Json } from './operations.js'

export type { OpenApiOptions } from './document.js'

/** What `idempotencyWithOpenApi` needs of the app: `OpenAPIHono`'s registry, to hold the shared problem schema. */
export interface OpenApiRegistryOwner {
  readonly openAPIRegistry: {
    /** `@asteasolutions/zod-to-openapi`'s `OpenAPIRegistry.registerComponent`. */
    registerComponent(type: 'schemas', name: string, component: object): unknown
  }
}

/** The parts of a `createRoute(...)` config the helper reads and extends. */
export interface OpenApiRouteLike {
  /** The method, lower case as `@hono/zod-openapi` writes it (`'post'`). */
  readonly method: string
  /** The path, with `{param}` templates (`'/orders/{id}'`). */
  readonly path: string
  /** The route's responses by status. */
  readonly responses: object
  /** The route's own middleware, run before idem's. */
  readonly middleware?: MiddlewareHandler | readonly MiddlewareHandler[]
  /** Plain OpenAPI parameters of the operation, beside the ones `request` generates. */
  readonly parameters?: readonly unknown[]
}

/** What `idempotencyWithOpenApi` returns. */
export interface HonoIdempotencyWithOpenApi {
  /** The Idempotency-Key middleware of `idem/hono`, made once from the options (`c.get('idem')` in the route). */
  readonly middleware: MiddlewareHandler
  /**
   * The route, protected and described: idem's middleware runs after the route's own,
   * the `Idempotency-Key` parameter is added to its parameters and idem's problems and
   * replay headers to its responses.
   * @throws InvalidOptionError when the options would not protect the route (its method
   *   is not in `methods`, or the `routes` list does not reach its path)
   */
  route<R extends OpenApiRouteLike>(route: R): R
}

/**
 * The Idempotency-Key middleware for `@hono/zod-openapi`, with a route helper that
 * protects a route and describes it: `app.openapi(idem.route(createRoute({ … })), handler)`.
 * The shared problem schema is registered in the app's registry now, so `app.doc()`
 * serves the described document as it is.
 *
 * @param app the `OpenAPIHono` app whose document the routes go into
 * @param options the options of `idempotency()` from `idem/hono`
 * @param openApi the problem schema's name (`operations` does not apply: the routes given to `route()` are the protected ones)
 * @throws InvalidOptionError naming the option, as `idempotency()` would
 * @see docs/openapi.md
 *
 * @example
 * const app = new OpenAPIHono()
 * const idem = idempotencyWithOpenApi(app, { store, scope: (c) => c.get('jwtPayload').sub })
 * app.openapi(idem.route(createRoute({ method: 'post', path: '/orders', request, responses })), createOrder)
 * app.doc31('/openapi.json', { openapi: '3.1.0', info: { title: 'Orders', version: '1' } })
 */
export function idempotencyWithOpenApi<Tx>(
  app: OpenApiRegistryOwner,
  options: IdempotencyOptions<Tx, Context>,
  openApi: Omit<OpenApiOptions, 'operations'> = {},
): HonoIdempotencyWithOpenApi {
  const caller = 'idempotencyWithOpenApi (hono)'
  if (openApi !== null && typeof openApi === 'object' && 'operations' in openApi) {
    throw new InvalidOptionError(`${caller}: option "operations" does not apply: the routes given to route() are the protected ones`)
  }
  const description = describeIdempotency(options, openApi, caller)
  const middleware = idempotency(options) as MiddlewareHandler
  const methods = new Set(description.policy.methods.map((m) => m.toLowerCase()))
  const { routes } = options
  app.openAPIRegistry.registerComponent('schemas', ...description.problemSchema)

  return {
    middleware,
    route(route) {
      const name = `${String(route.method).toUpperCase()} ${route.path}`
      if (!methods.has(String(route.method).toLowerCase())) {
        throw new InvalidOptionError(`${caller}: ${name} is not protected: the middleware protects ${description.policy.methods.join(', ')} only (its "methods" option)`)
      }
      const operation = route as unknown as Json
      const document: Json = { paths: { [route.path]: { [String(route.method).toLowerCase()]: operation } } }
      if (Array.isArray(routes) && !routesReach(routes, document)({ path: route.path, method: String(route.method).toLowerCase(), operation })) {
        throw new InvalidOptionError(`${caller}: ${name} is not protected: the "routes" option does not reach ${route.path}`)
      }
      const described = description.operation(operation, document, name)
      const own = route.middleware === undefined ? [] : Array.isArray(route.middleware) ? route.middleware : [route.middleware]
      return { ...route, middleware: [...own, middleware], parameters: described.parameters, responses: described.responses }
    },
  }
}
