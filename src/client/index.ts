export { createClient, type FetchCallOptions, type FetchResult, type IdemClient } from './client.js'
export {
  RETRYABLE_STATUSES,
  type ClientOptions,
  type FetchFunction,
  type RetryEvent,
  type RetryReason,
} from './options.js'
export { keyFromIntent, type IntentPart } from './intent-key.js'
export { IDEMPOTENT_REPLAYED_HEADER, mintKey, isReplayed } from './key.js'
export { IDEMPOTENCY_KEY_HEADER, serializeKeyHeader } from '../headers/idempotency-key.js'
export { backoffDelay, type Backoff, type BackoffContext, type BackoffOptions } from '../core/backoff.js'
export { parseRetryAfter } from './retry-after.js'
export * from './errors/index.js'
export { InvalidOptionError, InvalidKeyError } from '../core/errors/index.js'
