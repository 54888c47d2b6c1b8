/**
 * The middleware's options checked once, at start-up, so that a mistake fails the boot
 * rather than a request, and resolved to plain values: every default applied, the
 * precedence rule settled, the routes compiled. What a request reads of them checks
 * nothing.
 */
import { CHECKED_RUN } from '../core/call.js'
import { createIdem, DEFAULT_TTL_MS } from '../core/engine.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { idemEvents, warn, type EventStream } from '../core/events.js'
import { checkedScope, type CheckedScope } from '../core/identity.js'
import { MIN_MAX_OUTCOME_BYTES } from '../ports/key-store.js'
import type { KeyStore } from '../ports/key-store.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import { DEFAULT_MAX_BODY_BYTES } from './body.js'
import { DEFAULT_HTTP_DEADLINE_MS, DEFAULT_METHODS, DEFAULT_REPLAY_HEADERS, SHARED_SCOPE, type HttpEngine, type IdempotencyOptions } from './options.js'
import type { ProblemTypes } from './problem.js'
import { routeMatcher, type RouteMatcher } from './routes.js'
import { DEFAULT_MAX_STORED_BODY_BYTES, defaultStoreStatus, largestStoredBody, type StoredLimits } from './stored-response.js'

/** The options after validation, every default applied and every setting resolved to a plain value. */
export interface ResolvedOptions<Tx, Native> {
  idem: HttpEngine<Tx>
  /** The principal's scope, from the request; undefined: every caller shares `sharedScope`. */
  scope: ((request: Native) => string | Promise<string>) | undefined
  /** `SHARED_SCOPE`, checked once. */
  sharedScope: CheckedScope
  methods: ReadonlySet<string>
  /** Whether the request, with this path, is protected; undefined: every path is. */
  routes: RouteMatcher<Native> | undefined
  required: boolean
  strict: boolean
  ttlMs: number
  fields: readonly string[] | undefined
  storeStatus: (status: number) => boolean
  replayHeaders: ReadonlySet<string>
  waitMs: number
  deadlineMs: number
  maxBodyBytes: number
  maxStoredBodyBytes: number
  /** What bounds the stored form: `maxStoredBodyBytes`, and what the engine's store holds (`maxOutcomeBytes`). */
  limits: StoredLimits
  problemTypes: ProblemTypes | undefined
  events: EventStream
}

const KNOWN = optionNames<IdempotencyOptions<unknown>>({
  store: true, idem: true, scope: true, methods: true, routes: true, required: true, strict: true, ttlMs: true, fields: true,
  storeStatus: true, replayHeaders: true, waitMs: true, deadlineMs: true, maxBodyBytes: true, maxStoredBodyBytes: true, onOutcome: true, events: true, problemTypes: true,
})
// RFC 9110 token: what a method or a header name may be made of.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/**
 * Validates the options once, at start-up, and resolves them.
 * @throws InvalidOptionError naming the option
 */
export function resolveOptions<Tx, Native>(options: IdempotencyOptions<Tx, Native>): ResolvedOptions<Tx, Native> {
  if (options === null || typeof options !== 'object') fail('options', 'must be an object')
  assertKnownOptions('idempotency', options, KNOWN)
  const { methods = DEFAULT_METHODS, replayHeaders = DEFAULT_REPLAY_HEADERS, maxBodyBytes = DEFAULT_MAX_BODY_BYTES, storeStatus = defaultStoreStatus, events = idemEvents } = options
  assertShapes({ ...options, methods, replayHeaders, maxBodyBytes, storeStatus, events })
  const engine = engineOf(options.store, options.idem, options.onOutcome, events)
  const maxStoredBodyBytes = storedBodyLimit(engine, options.maxStoredBodyBytes)
  if (options.scope === undefined) warnSharedScope(events)
  const { settings } = engine
  return {
    idem: engine,
    scope: options.scope,
    sharedScope: checkedScope(SHARED_SCOPE),
    methods: new Set(methods.map((m) => m.toUpperCase())),
    routes: routeMatcher<Native>(options.routes),
    required: options.required ?? true,
    strict: options.strict ?? false,
    // The precedence rule: the middleware's own setting, then the engine's explicit one,
    // then HTTP's default (for retention, the engines' own).
    ttlMs: options.ttlMs ?? settings?.ttlMs ?? DEFAULT_TTL_MS,
    fields: options.fields,
    storeStatus,
    replayHeaders: new Set(replayHeaders.map((h) => h.toLowerCase())),
    waitMs: options.waitMs ?? settings?.waitMs ?? 0,
    deadlineMs: options.deadlineMs ?? settings?.deadlineMs ?? DEFAULT_HTTP_DEADLINE_MS,
    maxBodyBytes,
    maxStoredBodyBytes,
    limits: { maxBodyBytes: maxStoredBodyBytes, maxOutcomeBytes: engine.store.maxOutcomeBytes },
    problemTypes: options.problemTypes,
    events,
  }
}

// Each option of its own kind, the defaults of the list options applied.
function assertShapes<Tx, Native>(o: IdempotencyOptions<Tx, Native> & Required<Pick<IdempotencyOptions<Tx, Native>, 'methods' | 'replayHeaders' | 'maxBodyBytes' | 'storeStatus' | 'events'>>): void {
  const { scope, methods, required, strict, ttlMs, waitMs, deadlineMs, events, maxBodyBytes, maxStoredBodyBytes, fields, storeStatus, replayHeaders, onOutcome, problemTypes } = o
  if (scope !== undefined && typeof scope !== 'function') fail('scope', 'must be a function (request) => string')
  if (!isList(methods) || methods.length === 0 || !methods.every((m) => typeof m === 'string' && TOKEN.test(m))) {
    fail('methods', 'must be a non-empty list of HTTP method names')
  }
  if (required !== undefined && typeof required !== 'boolean') fail('required', 'must be true or false')
  if (strict !== undefined && typeof strict !== 'boolean') fail('strict', 'must be true or false')
  if (ttlMs !== undefined) assertDuration('idempotency: option "ttlMs"', ttlMs, 1)
  if (waitMs !== undefined) assertDuration('idempotency: option "waitMs"', waitMs, 0)
  if (deadlineMs !== undefined) assertDuration('idempotency: option "deadlineMs"', deadlineMs, 1)
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') fail('events', 'must be an event stream (createEventStream())')
  assertCount('idempotency: option "maxBodyBytes"', maxBodyBytes, 0, Number.MAX_SAFE_INTEGER)
  if (maxStoredBodyBytes !== undefined) assertCount('idempotency: option "maxStoredBodyBytes"', maxStoredBodyBytes, 0, Number.MAX_SAFE_INTEGER)
  if (fields !== undefined && (!isList(fields) || !fields.every((f) => typeof f === 'string' && f.length > 0))) {
    fail('fields', 'must be a list of body field names (dot paths such as "customer.id")')
  }
  if (typeof storeStatus !== 'function') fail('storeStatus', 'must be a function (status) => boolean')
  if (!isList(replayHeaders) || !replayHeaders.every((h) => typeof h === 'string' && TOKEN.test(h))) {
    fail('replayHeaders', 'must be a list of header names')
  }
  if (onOutcome !== undefined && typeof onOutcome !== 'function') fail('onOutcome', 'must be a function')
  if (problemTypes !== undefined && typeof problemTypes !== 'function' && !(typeof problemTypes === 'string' && URL.canParse(problemTypes))) {
    fail('problemTypes', 'must be an absolute URI (e.g. "https://docs.example.com/errors") or a function (code) => URI')
  }
}

// The largest response body stored: the option, within what the engine's store holds.
function storedBodyLimit(engine: HttpEngine<unknown>, explicit: number | undefined): number {
  const { name, maxOutcomeBytes } = engine.store
  const largest = largestStoredBody(maxOutcomeBytes)
  if (explicit === undefined) return Math.min(DEFAULT_MAX_STORED_BODY_BYTES, largest)
  if (explicit > largest) {
    fail(
      'maxStoredBodyBytes',
      `is ${explicit} bytes, but the ${name} store holds outcomes of at most ${maxOutcomeBytes} bytes, ` +
        `which leaves room for response bodies of at most ${largest} bytes (stored as base64, with the status and headers): set ${largest} or less`,
    )
  }
  return explicit
}

function engineOf<Tx>(
  store: KeyStore<Tx> | undefined,
  idem: HttpEngine<Tx> | undefined,
  onOutcome: IdempotencyOptions<Tx>['onOutcome'],
  events: EventStream,
): HttpEngine<Tx> {
  if (store !== undefined && idem !== undefined) fail('store', 'and "idem" are exclusive: pass the store, or an engine built on it')
  if (idem !== undefined) {
    if (idem === null || typeof idem !== 'object' || typeof idem[CHECKED_RUN] !== 'function') fail('idem', 'must be an engine from createIdem(...) or createLeasedIdem(...)')
    if (onOutcome !== undefined) fail('onOutcome', 'goes to the engine (createIdem / createLeasedIdem) when you pass one ("idem")')
    const max = (idem.store as Partial<HttpEngine<Tx>['store']> | null | undefined)?.maxOutcomeBytes
    if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < MIN_MAX_OUTCOME_BYTES) {
      fail('idem', "must be an engine whose store declares the largest outcome it holds (its store's maxOutcomeBytes), as createIdem(...) and createLeasedIdem(...) make")
    }
    return idem
  }
  if (store === undefined) fail('store', 'is required (or "idem", an engine from createIdem)')
  try {
    return createIdem({ store, onOutcome, events })
  } catch (cause) {
    if (cause instanceof InvalidOptionError) fail('store', `is invalid: ${cause.message}`)
    throw cause
  }
}

function warnSharedScope(events: EventStream): void {
  // Loud on purpose: without a scope, two tenants sending the same key share one stored response.
  warn(events, {
    code: 'shared-scope',
    source: 'idempotency',
    message:
      'idem: the idempotency middleware has no "scope" option, so every client shares one key space ' +
      `("${SHARED_SCOPE}") and one client could be answered with another's stored response. ` +
      'Pass scope: (request) => <the authenticated account or API key>.',
  })
}

function isList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value)
}

function fail(name: string, problem: string): never {
  throw new InvalidOptionError(`idempotency: option "${name}" ${problem}`)
}
