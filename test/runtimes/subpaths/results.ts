// What subpaths.test.ts and its scripts agree on: how a script is configured, the line
// it reports on, what each one reports, and the names of what it writes. Imports
// nothing, so the Node test reads it without loading a script.

/** The line prefix a script reports its result on: `IDEM-RESULT <json>`. */
export const RESULT_PREFIX = 'IDEM-RESULT '

/** Where the services are and the names this run may use (its own table, key prefix, stream). */
export interface ScriptConfig {
  redisUrl?: string
  /** A Redis key prefix of this run's own; the Node test deletes its keys afterwards. */
  prefix?: string
  dynamodbUrl?: string
  /** A DynamoDB table of this run's own, created (and dropped) by the Node test. */
  table?: string
}

/** A DynamoDB item's key in the run's table where a script counts an effect (in `n`), beside idem's own items. */
export const effectCounter = (id: string) => ({ pk: { S: `runtime-effect#${id}` }, sk: { S: '#' } })

/** The inbox consumer on Redis Streams: each entry's settlements in order, and the effect counts it read back. */
export interface StreamsResult {
  /** Per stream entry (by the message id it carries, then its entry id): the statuses it was settled with, in order. */
  entries: Array<{ id: string; entryId: string; statuses: string[] }>
  /** How many times the handler committed an effect, per message id, read from Redis. */
  effects: Record<string, number>
  /** Entries still pending in the group after the consumer stopped. */
  pending: number
}

/** The Redis key (in the run's prefix, in the message's slot) the consumer's handler counts message `id` in. */
export const streamEffectKey = (prefix: string, id: string) => `${prefix}effect:{${id}}`

/** The message ids the consumer is given: the first twice (a producer's resend), the second once. */
export const STREAM_MESSAGES = ['evt_runtime_1', 'evt_runtime_1', 'evt_runtime_2'] as const

/** One delivery to the webhook receiver, as answered. */
export interface WebhookAnswer {
  status: number
  replayed: string | null
  body: string
}

/** The webhook receiver: a signed delivery, its redelivery, one whose body changed on the way. */
export interface WebhookResult {
  first: WebhookAnswer
  redelivery: WebhookAnswer
  tampered: WebhookAnswer
  /** How many times the handler ran. */
  runs: number
}

/** The Standard Webhooks message id the webhook script delivers. */
export const WEBHOOK_ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W'

/** The document the OpenAPI script describes idem's contract in: an orders API, OpenAPI 3.1. */
export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'Orders', version: '1.0' },
  paths: {
    '/orders': {
      post: {
        operationId: 'createOrder',
        requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { amount: { type: 'integer' } } } } } },
        responses: { '201': { description: 'The order was placed.', content: { 'application/json': { schema: { type: 'object', properties: { id: { type: 'string' } } } } } } },
      },
    },
    '/orders/{id}': {
      get: {
        operationId: 'getOrder',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'The order.' } },
      },
      patch: {
        operationId: 'updateOrder',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'The order, changed.' } },
      },
    },
  },
} as const

/** The middleware's options the OpenAPI script describes (and a `scope`, which the description does not read). */
export const OPENAPI_OPTIONS = { routes: ['/orders'], ttlMs: 48 * 60 * 60 * 1000, problemTypes: 'https://docs.example.com/errors' } as const

/** The OpenAPI transform: the document `idempotencyOpenApi` returned. */
export interface OpenApiResult {
  document: Record<string, unknown>
}

/** What a Lambda function's invocation returned, as much of it as the test asserts. */
export interface LambdaAnswer {
  statusCode: number
  headers: Record<string, string>
  body: string
}

/** The Lambda HTTP handler on DynamoDB: a fresh invocation, the same request again, the key with another body. */
export interface LambdaResult {
  fresh: LambdaAnswer
  replay: LambdaAnswer
  mismatch: LambdaAnswer
  /** How many times the function ran. */
  runs: number
}

/** The order the Lambda script places (the effect counter's id). */
export const LAMBDA_ORDER = 'lambda-order-1'

/** The leased engine on DynamoDB: a first call, the same call again, the key with another input. */
export interface DynamoResult {
  fresh: { value: unknown; replayed: boolean }
  replay: { value: unknown; replayed: boolean }
  mismatch: { name: string; code: string }
  /** How many times the function ran. */
  runs: number
}

/** The key the DynamoDB script calls with (the effect counter's id). */
export const DYNAMO_ORDER = 'order-1'
