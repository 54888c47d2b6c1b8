export * from './core/errors/index.js'
export { createIdem, DEFAULT_TTL_MS, DEFAULT_WAIT_MS } from './core/engine.js'
export type { EngineSettings, Idem, IdemOptions, OutcomeEvent, OutcomeKind, RunOptions, RunResult } from './core/engine.js'
export { discard, isDiscarded, type Discarded } from './core/result.js'
export {
  createEventStream,
  idemEvents,
  type CallEvent,
  type DeadLetterEvent,
  type DispatchEvent,
  type EventStream,
  type HttpEvent,
  type IdemEvent,
  type IdemEventListener,
  type InboxEvent,
  type WarningEvent,
} from './core/events.js'
export { parseIdempotencyKey, assertValidKey, MAX_KEY_LENGTH, type ParseKeyOptions } from './core/key.js'
export { fingerprintRequest, fingerprintValue, type FingerprintInput } from './core/fingerprint.js'
export { serializeOutcome, parseOutcome } from './core/outcome.js'
export type { KeyStore, Store, BeginRequest, Claim, KeyRecord, NewRecord, Session } from './core/store.js'
export { memoryStore, type MemoryStore, type MemoryTx } from './stores/memory/index.js'
export { encryptedStore, type EncryptionOptions } from './stores/encrypted.js'
export { createLeasedIdem, DEFAULT_LEASE_MS } from './core/leased/engine.js'
export type { LeasedIdem, LeasedIdemOptions, LeasedRunOptions, LeasedErrorPolicy } from './core/leased/engine.js'
export type { LeasedStore, LeaseClaim } from './core/leased/store.js'
export type { StepContext } from './core/leased/steps.js'
export { deriveKey } from './core/leased/derive.js'
export { memoryLeasedStore, type MemoryLeasedStore } from './stores/memory/leased.js'
