/**
 * `idem/fetch`: the Idempotency-Key middleware on Web-standard Request/Response, for
 * any runtime or framework that speaks them. The Hono, Express and Fastify adapters
 * wrap exactly this.
 */
export { idempotency, type IdempotencyHandler, type IdempotencyNext } from '../handler.js'
export {
  DEFAULT_METHODS,
  DEFAULT_REPLAY_HEADERS,
  SHARED_SCOPE,
  TRANSIENT_STATUSES,
  defaultStoreStatus,
  routingPath,
  type HttpEngine,
  type IdempotencyContext,
  type IdempotencyOptions,
} from '../options.js'
export { DEFAULT_MAX_BODY_BYTES } from '../body.js'
export { BodyTooLargeError } from '../../core/errors/body-too-large.js'
export { PROBLEM_CONTENT_TYPE, problemResponse, isHttpProblem, type HttpProblem } from '../problem.js'
export { REPLAYED_HEADER, type StoredResponse } from '../stored-response.js'
export { putResponse, deleteResponse, type PutResult } from '../natural.js'
