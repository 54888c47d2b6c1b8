/**
 * `idem`: the engines, their errors, key and fingerprint helpers, the event stream and
 * the ports' types. Each store, framework adapter and broker has a subpath of its own
 * (`idem/postgres`, `idem/hono`, `idem/queue`, …), so an app loads only what it uses.
 * @see docs/engine.md
 */
export * from './core/errors/index.js'
export { BodyTooLargeError } from './http/body-too-large.js'
export { CorruptBodyError } from './http/corrupt-body.js'
export { RouteHijackedError } from './http/adapters/node/route-hijacked.js'
export { UnsupportedEncodingError } from './http/unsupported-encoding.js'
export { createIdem, DEFAULT_DEADLINE_MS, DEFAULT_TTL_MS, DEFAULT_WAIT_MS } from './core/engine.js'
export type { EngineSettings, Idem, IdemOptions, OutcomeEvent, OutcomeKind, RunOptions, RunResult } from './core/engine.js'
export { discard, isDiscarded, type Discarded } from './core/result.js'
export {
  createEventStream,
  idemEvents,
  type CallEvent,
  type EventStream,
  type IdemEvent,
  type IdemEventListener,
  type IdemEventTypes,
  type LeaseEvent,
  type StoreEvent,
  type StoreOperation,
  type WarningEvent,
  type EventStreamOptions,
} from './core/events.js'
export { jsonConsoleLogger, type FailureLine, type IdemLogger, type LogFields } from './core/logger.js'
// Each front end's events, added to IdemEventTypes where they are declared.
export type { HttpEvent, HttpOutcome, WebhookReceiverEvent } from './http/events.js'
export type { DeadLetterEvent, DispatchEvent, InboxEvent } from './queue/events.js'
export type { ReconcileEvent } from './data/events.js'
export { assertValidKey, MAX_KEY_LENGTH } from './core/identity.js'
export { parseIdempotencyKey, type ParseKeyOptions } from './headers/idempotency-key.js'
export { fingerprintValue } from './core/json-data.js'
export { fingerprintRequest, type FingerprintInput } from './http/request-fingerprint.js'
export type { KeyStore, BeginRequest, Claim, KeyRecord, NewRecord, Session } from './ports/key-store.js'
export { MIN_MAX_OUTCOME_BYTES } from './ports/key-store.js'
export { encryptedStore, type EncryptedStore, type EncryptionOptions } from './stores/encrypted.js'
export { createLeasedIdem, DEFAULT_LEASE_MS } from './core/leased/engine.js'
export type { LeasedIdem, LeasedIdemOptions, LeasedRunOptions, LeasedErrorPolicy } from './core/leased/engine.js'
export type { Lease, LeasedStore, LeaseClaim } from './ports/leased-store.js'
export type { StoreOperator, KeyInspection, TableStats, PruneOptions, SchemaMigrations, StoreUninstall } from './ports/operator.js'
export type { SqlConnection } from './ports/sql-dialect.js'
export type { StepContext } from './core/leased/steps.js'
export { deriveKey } from './core/leased/derive.js'
export { dualReadKeyStore, dualReadStore, type DualReadOptions } from './core/dual-read.js'
export type { KeyPeek, PeekResult } from './ports/key-peek.js'
