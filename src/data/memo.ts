import { createIdem, type OutcomeEvent } from '../core/engine.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import type { EventStream } from '../core/events.js'
import { fingerprintInput } from '../core/json-data.js'
import { assertIdentity } from '../core/identity.js'
import type { KeyStore } from '../ports/key-store.js'
import { assertDuration, assertKnownOptions, optionNames } from '../core/errors/option-checks.js'

/**
 * 14 days: a memoised output must outlive every redelivery of the message that asked for
 * it (SQS's maximum retention, the inbox default), or a late replay would call `fn`
 * again and get different wording.
 */
export const DEFAULT_MEMO_TTL_MS = 14 * 24 * 60 * 60 * 1000
/** How long a concurrent caller waits for the first call's `fn` (an LLM call can be slow). */
export const DEFAULT_MEMO_WAIT_MS = 60_000

/** What `createMemo` takes: the store, retention and wait. */
export interface MemoStoreOptions<Tx> {
  /** Where outputs are kept: any idem store (`postgresStore`, `sqliteStore`, `memoryStore`). */
  store: KeyStore<Tx>
  /** Retention of an output; an expired output is computed again. @default 14 days */
  ttlMs?: number
  /** How long a concurrent caller waits for the first before `InFlightError`. @default 60 000 */
  waitMs?: number
  /** Called once per memo call: `fresh` (fn ran) or `replayed` (stored output returned). Must not throw. */
  onOutcome?: (event: OutcomeEvent) => void
  /** Where memo's engine calls are reported (`{ type: 'call' }`). @default the process-wide `idemEvents` */
  events?: EventStream
}

/** Per-call options of `memo`: the version of `fn`, and retention and wait for this call. */
export interface MemoOptions {
  /**
   * The version of `fn` (prompt, model, code). Bump it when the output for the same input
   * may legitimately change: old outputs are then no longer returned. @default '1'
   */
  version?: string | number
  /** Overrides the store-wide `ttlMs` for this call. */
  ttlMs?: number
  /** Overrides the store-wide `waitMs` for this call. */
  waitMs?: number
}

/** Memoises a non-deterministic step. See `createMemo`. */
export type Memo = <T>(name: string, input: unknown, fn: () => T | Promise<T>, options?: MemoOptions) => Promise<T>

const OPTIONS = optionNames<MemoStoreOptions<unknown>>({ store: true, ttlMs: true, waitMs: true, onOutcome: true, events: true })
const CALL_OPTIONS = optionNames<MemoOptions>({ version: true, ttlMs: true, waitMs: true })

/**
 * Creates `memo(name, input, fn, options)`, which pins down a non-deterministic step
 * such as an LLM call. Its output is stored, keyed by `(name, version, SHA-256 of the
 * canonical JSON of input)`, and committed before `memo` returns, so the caller's
 * downstream writes only ever see a persisted output. A later call with the same key
 * returns the stored output (the same JSON text, parsed) and never calls `fn`; callers
 * running at the same time wait for the first and get its output, so `fn` runs once.
 * The first call returns the stored (parsed JSON) form too, so first call and replay
 * agree exactly.
 *
 * It runs on the idem engine in a transaction of its own: `scope` is
 * `memo:<name>@<version>`, `key` the input hash. While `fn` runs, that transaction holds
 * the key's lock: on Postgres one pooled connection (idle in transaction, mind
 * `idle_in_transaction_session_timeout`); on SQLite the database's single writer, so
 * other writers wait up to the store's `busyTimeoutMs`. For slow steps on SQLite, give
 * memo a store on a database file of its own.
 * Redis (leased mode) is not supported yet: it comes with the Redis store.
 *
 * A thrown `fn` stores nothing; the next call runs `fn` again.
 *
 * @throws InvalidOptionError for a malformed name, version or input (not JSON data)
 * @throws OutcomeNotSerializableError when `fn` returns something without an exact JSON form
 * @throws OutcomeTooLargeError when `fn` returns something larger than the store holds
 *   (`maxOutcomeBytes`, 16 MiB on the bundled stores): nothing is stored, and the next call runs `fn` again
 * @throws InFlightError when the first caller's `fn` runs longer than `waitMs`
 * @example
 * const memo = createMemo({ store: postgresStore({ pool }) })
 * const summary = await memo('summarise-intake', { intakeId, text }, () => llm.summarise(text), { version: 'prompt-v3' })
 * @see docs/data.md
 */
export function createMemo<Tx>(options: MemoStoreOptions<Tx>): Memo {
  assertKnownOptions('createMemo', options, OPTIONS)
  const {
    store,
    ttlMs = DEFAULT_MEMO_TTL_MS,
    waitMs = DEFAULT_MEMO_WAIT_MS,
    onOutcome,
    events,
  } = options
  if (store === null || typeof store !== 'object' || typeof store.begin !== 'function') {
    throw new InvalidOptionError('createMemo: option "store" must be an idem store (postgresStore, sqliteStore or memoryStore)')
  }
  assertDuration('createMemo: option "ttlMs"', ttlMs, 1)
  assertDuration('createMemo: option "waitMs"', waitMs, 0)
  const idem = createIdem({ store, ttlMs, waitMs, ...(onOutcome === undefined ? {} : { onOutcome }), ...(events === undefined ? {} : { events }) })

  return async function memo<T>(name: string, input: unknown, fn: () => T | Promise<T>, options: MemoOptions = {}): Promise<T> {
    assertName(name)
    if (typeof fn !== 'function') throw new InvalidOptionError('memo: "fn" must be a function')
    assertKnownOptions('memo', options, CALL_OPTIONS)
    const version = versionOf(options.version)
    const hash = fingerprintInput(input, 'memo: "input"', 'input')
    // The hash is both key and fingerprint: same key means same input, so a mismatch cannot happen.
    const { value } = await idem.run<T>(
      {
        scope: `memo:${name}@${version}`,
        key: hash,
        fingerprint: hash,
        ...(options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }),
        ...(options.waitMs === undefined ? {} : { waitMs: options.waitMs }),
      },
      // fn gets no transaction: its output is the only thing this step commits.
      () => fn(),
    )
    return value
  }
}

const MAX_NAME_LENGTH = 200

// '@' separates name from version in the scope, so a name may not contain it; that keeps
// ('a@b', 'c') and ('a', 'b@c') apart.
function assertName(name: unknown): asserts name is string {
  if (typeof name === 'string' && name.includes('@')) {
    throw new InvalidOptionError(`memo: "name" must be 1–${MAX_NAME_LENGTH} characters without "@" or NUL, got ${JSON.stringify(name)}`)
  }
  assertIdentity('memo: "name"', name, MAX_NAME_LENGTH, InvalidOptionError)
}

function versionOf(version: unknown): string {
  if (version === undefined) return '1'
  if (typeof version === 'number' && Number.isFinite(version)) return String(version)
  if (typeof version !== 'string') {
    throw new InvalidOptionError(`memo: option "version" must be a non-empty string or a finite number, got ${JSON.stringify(version)}`)
  }
  assertIdentity('memo: option "version"', version, MAX_NAME_LENGTH, InvalidOptionError)
  return version
}
