/**
 * `idem/lambda`: AWS Lambda front ends over idem's engines, HTTP middleware and inbox.
 * `makeHttpHandler` is the Idempotency-Key middleware for API Gateway (REST and HTTP
 * APIs), Function URLs and ALB targets. `makeIdempotent`
 * (and `middyIdempotent`, its Middy middleware) runs a function once per event key
 * (EventBridge, SNS, any event), on the transactional engine (Postgres: the effect and
 * the key in one transaction) or the leased one (DynamoDB, Redis); `makeSqsBatchHandler`
 * runs each record of an SQS batch once per message id and reports only the failed ones
 * in `batchItemFailures`. Every call is bounded by the invocation's remaining time, so a
 * timed-out invocation leaves its key free for the retry. `webhookReceiver` receives
 * webhooks behind the same HTTP front doors: the signature checked on the raw bytes, each
 * event recorded once through the inbox.
 * @see docs/lambda.md
 */
export { makeIdempotent, type IdempotentFunction, type MakeIdempotentOptions } from './make-idempotent.js'
export { middyIdempotent, type IdemContext, type MiddyIdempotency, type MiddyRequest } from './middy.js'
export { makeHttpHandler, type HttpHandlerOptions, type IdempotentHttpFunction } from './http-handler.js'
export type { LambdaHttpEvent, LambdaHttpResult } from './http-event.js'
export { webhookReceiver } from './webhook-receiver.js'
export type { WebhookEvent, WebhookEventId, WebhookReceiverOptions, WebhookVerify } from '../http/webhooks/receiver.js'
export { makeSqsBatchHandler, type SqsBatchOptions, type SqsMessage, type SqsRecordHandler } from './sqs-batch.js'
export { DEFAULT_MARGIN_MS } from './invocation.js'
export type { LambdaEngine, StoreOf } from './engine.js'
