import { InvalidOptionError } from './errors/invalid-option.js'
import { fingerprintInput } from './json-data.js'
import { assertScope, assertValidKey } from './identity.js'
import { assertDuration, assertKnownOptions, type KnownOptions } from './validate.js'
import type { CallEvent, EventStream, OutcomeEvent, OutcomeKind } from './events.js'

/**
 * What identifies one call, the same in both modes (transactional `createIdem` and
 * leased `createLeasedIdem`), so both accept and refuse exactly the same calls.
 */
export interface CallOptions {
  /**
   * Who the key belongs to (account, API key): from the server-side principal, never the
   * client. 1–1024 characters, without NUL, well-formed UTF-16 (no lone surrogate).
   */
  scope: string
  /** The caller's idempotency key: 1–255 visible ASCII characters. */
  key: string
  /** What identifies the request, as a precomputed fingerprint (see `fingerprintRequest`)... */
  fingerprint?: string
  /** ...or as JSON data, canonicalised and hashed (a Map, a Set, a class instance without `toJSON`… is refused). One of the two is required. */
  input?: unknown
  /** Overrides the engine's `ttlMs` for this call. */
  ttlMs?: number
  /** Overrides the engine's `waitMs` for this call. */
  waitMs?: number
  /** Overrides the engine's `deadlineMs` for this call: how long its function may hold the key. */
  deadlineMs?: number
}

/** The call's fingerprint: the given one, or the hash of `input`. */
export function fingerprintOf(options: { fingerprint?: string | undefined; input?: unknown }): string {
  if (options.fingerprint !== undefined) {
    if (typeof options.fingerprint !== 'string' || options.fingerprint.length === 0) {
      throw new InvalidOptionError('run: option "fingerprint" must be a non-empty string')
    }
    return options.fingerprint
  }
  if (!('input' in options)) {
    throw new InvalidOptionError('run: pass "input" (JSON data) or "fingerprint" to identify the request')
  }
  return fingerprintInput(options.input, 'run: option "input"', 'input')
}

/** A call's options checked, with the engine's defaults applied. */
export interface ResolvedCall {
  scope: string
  key: string
  fingerprint: string
  ttlMs: number
  waitMs: number
  deadlineMs: number
}

/**
 * Checks a call before anything touches the store, and fills in the engine's defaults.
 * @param known the names the engine's call options may have (`CallOptions`' and its own)
 * @throws InvalidOptionError / InvalidKeyError naming what is wrong
 */
export function resolveCall(options: CallOptions, defaults: { ttlMs: number; waitMs: number; deadlineMs: number }, known: KnownOptions): ResolvedCall {
  assertKnownOptions('run', options, known)
  const { scope, key } = options
  assertScope(scope)
  assertValidKey(key)
  const fingerprint = fingerprintOf(options)
  const ttlMs = options.ttlMs ?? defaults.ttlMs
  const waitMs = options.waitMs ?? defaults.waitMs
  const deadlineMs = options.deadlineMs ?? defaults.deadlineMs
  assertDuration('run: option "ttlMs"', ttlMs, 1)
  assertDuration('run: option "waitMs"', waitMs, 0)
  assertDuration('run: option "deadlineMs"', deadlineMs, 1)
  return { scope, key, fingerprint, ttlMs, waitMs, deadlineMs }
}

/** Reports one call's outcome, timed from `started` (see `callReporter`). */
export type ReportCall = (kind: OutcomeKind, scope: string, started: number, error?: unknown) => void

/**
 * Reports each call's outcome to the event stream and to the engine's own `onOutcome`
 * hook, timing it from `started` (`performance.now()`). A throwing hook is ignored:
 * metrics must never change a call's outcome. Builds nothing when nobody listens.
 */
export function callReporter(
  events: EventStream,
  onOutcome: ((event: OutcomeEvent) => void) | undefined,
  engine: CallEvent['engine'],
  store: string,
): ReportCall {
  return function report(kind: OutcomeKind, scope: string, started: number, error?: unknown): void {
    if (onOutcome === undefined && !events.listening) return
    const durationMs = performance.now() - started
    if (onOutcome !== undefined) {
      try {
        onOutcome({ kind, scope, store, durationMs, error })
      } catch {
        // ignored on purpose, see above
      }
    }
    if (events.listening) events.emit({ type: 'call', engine, kind, scope, store, durationMs, error })
  }
}
