/**
 * `idem/openapi/fastify`: the Fastify plugin and a `transformObject` for
 * `@fastify/swagger` that describes idem's contract on exactly the routes the plugin
 * runs on. `@fastify/swagger` itself is not imported.
 */
import type { FastifyPluginCallback, FastifyRequest } from 'fastify'
import { idempotency } from '../../fastify.js'
import type { IdempotencyOptions } from '../../options.js'
import { describeIdempotency, type OpenApiDocumentLike, type OpenApiOptions } from './document.js'
import { PROTECTED_MARK, takeMarks } from './marks.js'
import type { Json } from './operations.js'

export type { OpenApiDocumentLike, OpenApiOptions } from './document.js'

/** What `idempotencyWithOpenApi` returns: the plugin to register, and the transform for `@fastify/swagger`. */
export interface FastifyIdempotencyWithOpenApi {
  /**
   * The Idempotency-Key plugin of `idem/fastify` (`idempotency(options)`), which also
   * marks every route declared after it in its context, so the transform knows them.
   * Register it where you would register `idempotency(options)`, before the routes.
   */
  readonly plugin: FastifyPluginCallback
  /**
   * `@fastify/swagger`'s `transformObject`: the generated document with idem's contract
   * on the protected routes (those marked, whose method is in `methods` and whose path
   * the `routes` list reaches, or the `operations` named).
   */
  transformObject(input: { openapiObject?: object; swaggerObject?: object }): Record<string, unknown>
}

/**
 * The Fastify plugin with its OpenAPI description: register `plugin` in place of
 * `idempotency(options)`, and pass `transformObject` to `@fastify/swagger` (OpenAPI 3
 * mode). The routes declared after `plugin` in its context (and its children), where
 * its hooks run, are the ones described, with the same `methods` and `routes` rules.
 *
 * @param options the options of `idempotency()` from `idem/fastify`
 * @param openApi `operations` (needed with a `routes` function) and the problem schema's name
 * @throws InvalidOptionError naming the option, as `idempotency()` would
 * @see docs/openapi.md
 *
 * @example
 * const idem = idempotencyWithOpenApi({ store, scope: (req) => String(req.headers['x-account'] ?? 'anonymous') })
 * await app.register(swagger, { openapi: { info: { title: 'Orders', version: '1' } }, transformObject: idem.transformObject })
 * await app.register(async (orders) => {
 *   await orders.register(idem.plugin)
 *   orders.post('/orders', createOrder)
 * })
 */
export function idempotencyWithOpenApi<Tx>(options: IdempotencyOptions<Tx, FastifyRequest>, openApi: OpenApiOptions = {}): FastifyIdempotencyWithOpenApi {
  const description = describeIdempotency(options, openApi, 'idempotencyWithOpenApi (fastify)')
  const middleware = idempotency(options)

  const plugin: FastifyPluginCallback = (fastify, pluginOptions, done) => {
    // @fastify/swagger copies a route schema's `x-` keys onto its operation.
    fastify.addHook('onRoute', (route) => {
      route.schema = Object.assign({}, route.schema, { [PROTECTED_MARK]: true })
    })
    middleware(fastify, pluginOptions, done)
  }
  // In the registering context, as the middleware's own hooks are.
  Object.assign(plugin, { [Symbol.for('skip-override')]: true })

  return {
    plugin,
    transformObject({ openapiObject }) {
      if (openapiObject === undefined) {
        throw new TypeError('idempotencyWithOpenApi: @fastify/swagger is in Swagger 2.0 mode; register it with { openapi: { … } } for an OpenAPI 3 document')
      }
      const { document, marked, count } = takeMarks(openapiObject as Json)
      if (count === 0 && openApi.operations === undefined) {
        throw new Error('idempotencyWithOpenApi: no route of the document was declared after the plugin: register idem.plugin (in place of idempotency()) before the routes it protects')
      }
      return description.apply(document as unknown as OpenApiDocumentLike, { explicit: openApi.operations, candidates: marked }) as unknown as Record<string, unknown>
    },
  }
}
