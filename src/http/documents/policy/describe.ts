import { CHECKED_RUN } from '../../../core/call.js'
import { InFlightError } from '../../../core/errors/in-flight.js'
import { LeaseLostError } from '../../../core/errors/lease-lost.js'
import { OverranError } from '../../../core/errors/overran.js'
import { StoreUnavailableError } from '../../../core/errors/store-unavailable.js'
import { MAX_KEY_LENGTH } from '../../../core/identity.js'
import { SHARED_SCOPE, type HttpEngine, type IdempotencyOptions } from '../../options.js'
import { PROBLEMS, problemType, type ProblemCode } from '../../problem.js'
import { resolveOptions, type ResolvedOptions } from '../../resolved-options.js'
import { BODY_OMITTED_HEADER, REPLAYED_HEADER } from '../../stored-response.js'
import { bytes, code, duration, headerCase, list } from './words.js'

/** Which engine the middleware runs on. */
type EngineMode = 'transactional' | 'leased' | 'unknown'
/** One problem a client can receive, as the policy states it. */
export interface PolicyError {
  readonly code: ProblemCode
  readonly status: number
  readonly title: string
  /** The RFC 9457 `type` URI the answer carries (after `problemTypes`). */
  readonly type: string
  /** When it is answered. */
  readonly when: string
  /** What a client should do. */
  readonly retry: string
  /** The `Retry-After` seconds it carries, if any. */
  readonly retryAfterSeconds?: number
}

/**
 * The policy as data: what the middleware does with the options it was given, every
 * default applied. `format: 'json'` renders exactly this.
 */
export interface IdempotencyPolicyDocument {
  /** The version of this document's shape. */
  readonly policyVersion: 1
  readonly header: 'Idempotency-Key'
  /** Methods that take a key, upper case. */
  readonly methods: readonly string[]
  /** The protected paths, or `'all'`, or `'selected'` when a predicate decides. */
  readonly paths: readonly string[] | 'all' | 'selected'
  /** True when a protected request without a key is refused (400); false when it is processed unprotected. */
  readonly required: boolean
  readonly key: {
    readonly syntax: 'RFC 9651 sf-string'
    readonly bareAccepted: boolean
    readonly minLength: 1
    readonly maxLength: number
    readonly characters: 'visible ASCII (0x21-0x7E)'
  }
  /** `per-client`: keys are kept per authenticated principal; `shared`: one key space for every client. */
  readonly scope: 'per-client' | 'shared'
  readonly fingerprint: {
    readonly method: true
    readonly path: true
    readonly query: 'sorted pairs'
    /** `'whole'`, or the body fields compared (dot paths). */
    readonly body: 'whole' | readonly string[]
    readonly maxBodyBytes: number
  }
  /** How long a stored response is replayed, in milliseconds; then the key is new. */
  readonly retentionMs: number
  /** How long a request may be processed, in milliseconds; one still running then is given up on (503 `overran`). */
  readonly deadlineMs: number
  readonly stored: {
    /** The statuses (200–599) whose responses are stored, as inclusive ranges. */
    readonly statuses: ReadonlyArray<readonly [number, number]>
    /** The same, in words (`2xx, 3xx and 4xx except 408, 425 and 429`). */
    readonly summary: string
    /** The statuses not stored, in words. */
    readonly notStored: string
  }
  readonly replay: {
    /** Response headers kept for replays, lower case. */
    readonly headers: readonly string[]
    /** The header every replay carries. */
    readonly marker: { readonly name: string; readonly value: 'true' }
    /** Response bodies larger than this are stored without their body. */
    readonly maxStoredBodyBytes: number
    /** The header a replay of such a response carries, with an empty body. */
    readonly bodyOmittedMarker: { readonly name: string; readonly value: 'true' }
  }
  readonly concurrent: {
    /** How long a duplicate waits for the first request before 409, in milliseconds. */
    readonly waitMs: number
    readonly status: number
    readonly retryAfterSeconds: number | undefined
    /** What a different request under a running key gets: 422 at once (leased), 409 until the first finishes (transactional), or not known. */
    readonly mismatchWhileRunning: 'immediate' | 'after-first-finishes' | 'unknown'
  }
  readonly errors: readonly PolicyError[]
}

// Stands in for the engine when the options name none: the policy runs nothing.
const nothingRuns = (): Promise<never> => Promise.reject(new Error('idempotencyPolicy: this engine only describes options; it runs nothing'))
const POLICY_ONLY: HttpEngine<never> = {
  run: nothingRuns,
  [CHECKED_RUN]: nothingRuns,
  // No store to size stored responses by: the options' own maxStoredBodyBytes (or its default) stands.
  store: { name: 'none', maxOutcomeBytes: Number.MAX_SAFE_INTEGER },
}

/** The policy as data (what `format: 'json'` renders): the one source of the page, the CLI and the OpenAPI description. */
export function describePolicy<Tx, Native>(options: IdempotencyOptions<Tx, Native>, paths: readonly string[] | undefined): IdempotencyPolicyDocument {
  // Not an object: the middleware's own refusal, word for word.
  if (options === null || typeof options !== 'object') resolveOptions(options)
  const given = options
  const withEngine = given.store === undefined && given.idem === undefined ? { ...given, idem: POLICY_ONLY as HttpEngine<Tx> } : given
  // A missing scope is stated in the page; the start-up warning is for servers, not for docs.
  const o = resolveOptions({ ...withEngine, scope: given.scope ?? (() => SHARED_SCOPE) })
  const mode = engineMode(o.idem)
  const stored = storedStatuses(o.storeStatus)
  const methods = [...o.methods]
  const errors = policyErrors(o, mode)
  const inFlightRetry = new InFlightError('').retryAfterSeconds
  const raw = given.routes
  return {
    policyVersion: 1,
    header: 'Idempotency-Key',
    methods,
    paths: paths !== undefined ? [...paths] : raw === undefined ? 'all' : typeof raw === 'function' ? 'selected' : raw.map((r) => (r instanceof RegExp ? String(r) : r)),
    required: o.required,
    key: { syntax: 'RFC 9651 sf-string', bareAccepted: !o.strict, minLength: 1, maxLength: MAX_KEY_LENGTH, characters: 'visible ASCII (0x21-0x7E)' },
    scope: given.scope === undefined ? 'shared' : 'per-client',
    fingerprint: { method: true, path: true, query: 'sorted pairs', body: o.fields === undefined ? 'whole' : [...o.fields], maxBodyBytes: o.maxBodyBytes },
    // Both engines keep DEFAULT_TTL_MS when nobody set a ttlMs; resolveOptions has applied every explicit one.
    retentionMs: o.ttlMs,
    deadlineMs: o.deadlineMs,
    stored,
    replay: {
      headers: [...o.replayHeaders],
      marker: { name: headerCase(REPLAYED_HEADER), value: 'true' },
      maxStoredBodyBytes: o.maxStoredBodyBytes,
      bodyOmittedMarker: { name: headerCase(BODY_OMITTED_HEADER), value: 'true' },
    },
    concurrent: {
      waitMs: o.waitMs,
      status: PROBLEMS['in-flight'].status,
      retryAfterSeconds: inFlightRetry,
      mismatchWhileRunning: mode === 'leased' ? 'immediate' : mode === 'transactional' ? 'after-first-finishes' : 'unknown',
    },
    errors,
  }
}

/** Every problem a client of these options can get, in the order the page lists them. */
function policyErrors<Tx, Native>(o: ResolvedOptions<Tx, Native>, mode: EngineMode): PolicyError[] {
  const methods = [...o.methods]
  const retryAfter = (error: { retryAfterSeconds: number | undefined }): number | undefined => error.retryAfterSeconds
  const errors: PolicyError[] = []
  const add = (code: ProblemCode, when: string, retry: string, retryAfterSeconds?: number): void => {
    const { status, title } = PROBLEMS[code]
    errors.push({ code, status, title, type: problemType(code, o.problemTypes), when, retry, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) })
  }
  if (o.required) add('missing-key', `a ${list(methods.map(code), 'or')} request without \`Idempotency-Key\``, 'add the header (a new key) and send it again')
  add('invalid-key', 'the header is not one valid key (see above), or it was sent twice', 'fix the key; nothing was processed')
  add('body-too-large', `the body is larger than ${bytes(o.maxBodyBytes)}`, 'send a smaller body; nothing was processed')
  add(
    'fingerprint-mismatch',
    'the key was first used with a different request (method, path, query or body)',
    'do not retry: a new request needs a new key',
  )
  add('in-flight', 'the first request with this key is still being processed', 'wait `Retry-After` seconds, then retry with the same key', retryAfter(new InFlightError('')))
  if (mode !== 'transactional') {
    add(
      'lease-lost',
      'another attempt with this key took its work over while this one stalled',
      'wait `Retry-After` seconds, then retry with the same key to get its response',
      retryAfter(new LeaseLostError('')),
    )
  }
  add(
    'overran',
    `the request was still being processed ${duration(o.deadlineMs)} after it started: the server gave up on it and stored nothing for its key`,
    'wait `Retry-After` seconds, then retry with the same key: it is processed afresh',
    retryAfter(new OverranError('')),
  )
  add(
    'store-unavailable',
    'the server cannot reach its idempotency store (before processing the request, or while storing its response)',
    'wait `Retry-After` seconds, then retry with the same key',
    retryAfter(new StoreUnavailableError('')),
  )
  add(
    'outcome-unreadable',
    'the response stored for this key cannot be read back; nothing was replayed or processed again',
    "report it: retrying with the same key does not help until the server's operator repairs the stored response",
  )
  add('migration-required', 'the server is not set up for idempotency; nothing was processed', 'retry later with the same key')
  add('invalid-option', 'the server is misconfigured; nothing was processed', 'retry later with the same key')
  return errors
}

/** Which engine the middleware runs on, told by its store's shape (the ports differ). */
function engineMode(engine: HttpEngine<unknown>): EngineMode {
  const store = (engine as { store?: { claim?: unknown; begin?: unknown } }).store
  if (typeof store?.claim === 'function') return 'leased'
  if (typeof store?.begin === 'function') return 'transactional'
  return 'unknown'
}

/** Asks `storeStatus` about every final status, so the page states what it decides, whatever it is. */
function storedStatuses(storeStatus: (status: number) => boolean): IdempotencyPolicyDocument['stored'] {
  const ranges: Array<[number, number]> = []
  const phrases: string[] = []
  const refused: string[] = []
  for (let hundred = 200; hundred < 600; hundred += 100) {
    const kept: number[] = []
    const dropped: number[] = []
    for (let status = hundred; status < hundred + 100; status++) {
      if (storeStatus(status)) {
        kept.push(status)
        const last = ranges[ranges.length - 1]
        if (last !== undefined && last[1] === status - 1) last[1] = status
        else ranges.push([status, status])
      } else dropped.push(status)
    }
    const family = `${hundred / 100}xx`
    if (dropped.length === 0) phrases.push(family)
    else if (kept.length === 0) refused.push(family)
    else if (dropped.length <= kept.length) {
      phrases.push(`${family} except ${list(dropped.map(String))}`)
      refused.push(...dropped.map(String))
    } else {
      phrases.push(...kept.map(String))
      refused.push(`${family} except ${list(kept.map(String))}`)
    }
  }
  return { statuses: ranges, summary: phrases.length === 0 ? 'none' : list(phrases), notStored: refused.length === 0 ? 'none' : list(refused) }
}

// The page as blocks, so that Markdown and HTML say the same thing in the same words.
