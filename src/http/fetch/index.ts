/**
 * `idem/fetch`: the Idempotency-Key middleware on Web-standard Request/Response, for
 * any runtime or framework that speaks them. Every adapter (Hono, Express, Fastify,
 * NestJS) runs the same middleware behind it, on its own exchange.
 */
export { idempotency, type IdempotencyHandler, type IdempotencyNext } from '../handler.js'
export {
  DEFAULT_HTTP_DEADLINE_MS,
  DEFAULT_METHODS,
  DEFAULT_REPLAY_HEADERS,
  SHARED_SCOPE,
  type HttpEngine,
  type IdempotencyContext,
  type IdempotencyOptions,
} from '../options.js'
export { routingPath } from '../routes.js'
export { DEFAULT_MAX_BODY_BYTES } from '../body.js'
export { BodyTooLargeError } from '../body-too-large.js'
export { CorruptBodyError } from '../corrupt-body.js'
export { DECODED_CODINGS, UnsupportedEncodingError } from '../unsupported-encoding.js'
export {
  DEFAULT_PROBLEM_TYPE_BASE,
  PROBLEM_CONTENT_TYPE,
  PROBLEMS,
  problem,
  problemResponse,
  problemStatus,
  problemType,
  type ProblemCode,
  type ProblemExtras,
  type ProblemSpec,
  type ProblemTypes,
} from '../problem.js'
export { webhookReceiver, type WebhookEvent, type WebhookEventId, type WebhookReceiverOptions, type WebhookVerify } from '../webhook.js'
export { REPLAYED_HEADER, STORED_HEADERS_ROOM, TRANSIENT_STATUSES, defaultStoreStatus, largestStoredBody, type StoredResponse } from '../stored-response.js'
export { putResponse, deleteResponse, type PutResult } from '../natural-idempotency.js'
export { idempotencyPolicy, type IdempotencyPolicyDocument, type PolicyError, type PolicyFormat } from '../documents/policy/index.js'
