/**
 * `idem/openapi`: idem's contract (the `Idempotency-Key` header, its problems, the
 * `Idempotent-Replayed` header) written into an API's own OpenAPI 3.0 or 3.1 document,
 * from the middleware's options. It imports no framework; the integrations for
 * `@fastify/swagger`, `@nestjs/swagger` and `@hono/zod-openapi` are `idem/openapi/fastify`,
 * `idem/openapi/nestjs` and `idem/openapi/hono`.
 */
export { idempotencyOpenApi, type OpenApiDocumentLike, type OpenApiOptions } from './document.js'
