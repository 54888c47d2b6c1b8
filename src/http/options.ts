import type { CallOptions } from '../core/call.js'
import { createIdem, type EngineSettings, type OutcomeEvent, type RunResult } from '../core/engine.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { idemEvents, warn, type EventStream } from '../core/events.js'
import type { Discarded } from '../core/result.js'
import { MIN_MAX_OUTCOME_BYTES } from '../core/outcome.js'
import type { KeyStore } from '../core/store.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames } from '../core/validate.js'
import { DEFAULT_MAX_BODY_BYTES } from './body.js'
import type { ProblemTypes } from './problem.js'
import { DEFAULT_MAX_STORED_BODY_BYTES, largestStoredBody } from './stored-response.js'

/**
 * 30 seconds: how long a route may hold its key by default over HTTP (see `deadlineMs`).
 * Far above a healthy route, and below the 60 s after which common proxies and load
 * balancers (nginx, AWS ALB) give up on a request, so the client still gets idem's
 * 503 with Retry-After rather than the proxy's 504.
 */
export const DEFAULT_HTTP_DEADLINE_MS = 30_000

/** Methods that require a key by default: the non-idempotent ones (RFC 9110 §9.2.2). */
export const DEFAULT_METHODS: readonly string[] = ['POST', 'PATCH']

/**
 * Headers replayed by default: the ones that describe the stored body or point at the
 * created resource. Never `Set-Cookie` (a session minted for the first caller) unless
 * the allow-list names it.
 */
export const DEFAULT_REPLAY_HEADERS: readonly string[] = [
  'content-type',
  'content-language',
  'content-disposition',
  'content-location',
  'location',
  'link',
  'etag',
  'last-modified',
  'cache-control',
]

/** Statuses a client is expected to retry (timeout, too early, rate limited): never stored. */
export const TRANSIENT_STATUSES: readonly number[] = [408, 425, 429]

/** The scope used when no `scope` function is given: every caller shares one key space. */
export const SHARED_SCOPE = 'shared'

/**
 * Stores 2xx, 3xx and non-transient 4xx outcomes; 5xx and 408/425/429 are rolled back
 * so that their retry runs again (DESIGN "What is stored").
 * @example
 * defaultStoreStatus(201) // true
 * defaultStoreStatus(503) // false: rolled back, the retry runs again
 */
export function defaultStoreStatus(status: number): boolean {
  return status < 500 && !TRANSIENT_STATUSES.includes(status)
}

/** What the route handler receives while a key is held. */
export interface IdempotencyContext<Tx> {
  /** The open transaction: write the request's effects through it so they commit with the key. */
  tx: Tx
  /** The parsed `Idempotency-Key`. */
  key: string
  /** The scope the key is stored under. */
  scope: string
}

/**
 * What the middleware needs of an engine: its `run`, which both engines have. With the
 * transactional engine (`createIdem`) `Tx` is the open transaction; with the leased
 * engine (`createLeasedIdem`, e.g. on Redis) it is the step context (`step`, `derive`).
 */
export interface HttpEngine<Tx> {
  /** Runs `fn` at most once per `(scope, key)` and returns its stored outcome (see `Idem.run`, `LeasedIdem.run`). */
  run<T>(options: CallOptions, fn: (tx: Tx) => T | Discarded<T> | Promise<T | Discarded<T>>): Promise<RunResult<T>>
  /** What the engine was given explicitly; the middleware keeps it where it sets nothing itself. */
  readonly settings?: EngineSettings
  /** Where the engine keeps outcomes: the middleware fits the responses it stores to what it holds (`maxOutcomeBytes`). */
  readonly store: { readonly name: string; readonly maxOutcomeBytes: number }
}

/**
 * Options of the HTTP middleware, shared by `idem/fetch`, `idem/hono`, `idem/express`,
 * `idem/fastify` and `idem/nestjs`. `Native` is the framework's own request (the Fetch
 * `Request`, Hono's `Context`, Express's `req`, Fastify's request, Nest's request),
 * handed to `scope` and `routes` so they can read what authentication put there.
 */
export interface IdempotencyOptions<Tx, Native = unknown> {
  /** Where keys and outcomes live (e.g. `postgresStore(...)`). Give this or `idem`. */
  store?: KeyStore<Tx>
  /**
   * An engine, to share one with other front ends, or the leased engine for effects
   * outside the database (`createLeasedIdem`: the route's `idem.tx` is then the step
   * context). Give this or `store`. Settings: what you set here wins; what you set
   * explicitly on the engine comes next; for what neither set, the HTTP defaults apply
   * (`waitMs` 0: a duplicate is answered 409 at once; `ttlMs` 24 h; `deadlineMs` 30 s).
   */
  idem?: HttpEngine<Tx>
  /**
   * The principal the key belongs to (account, API key), from the server side, never
   * from the client. Without it every caller shares one key space, and idem warns once.
   */
  scope?: (request: Native) => string | Promise<string>
  /** Methods that require a key. @default ['POST', 'PATCH'] */
  methods?: readonly string[]
  /**
   * Which paths the middleware protects: a predicate, or a list of exact paths,
   * `/prefix/*` patterns and regular expressions. A list fails closed: paths are
   * compared case-insensitively, percent-decoded, without duplicate or trailing slashes
   * (see `routingPath`), so no framework's routing can reach a listed route unprotected.
   * A predicate gets the framework's own request and is the caller's to get right. Mounting the
   * middleware on the protected routes with the framework's own router needs neither.
   * @default every path
   */
  routes?: ((request: Native) => boolean) | readonly (string | RegExp)[]
  /** Missing key: `true` answers 400, `false` lets the request through unprotected. @default true */
  required?: boolean
  /** Accept only quoted sf-string keys (`"…"`), not bare ones. @default false */
  strict?: boolean
  /** How long a stored response is kept; an expired key is a new key. @default the engine's explicit `ttlMs`, else 24 h */
  ttlMs?: number
  /** Compare only these JSON / form body fields (dot paths) in the fingerprint. @default the whole body */
  fields?: readonly string[]
  /** Which statuses are stored and replayed. @default `defaultStoreStatus` (not 5xx, 408, 425, 429) */
  storeStatus?: (status: number) => boolean
  /** Response headers kept for replays (case-insensitive). @default `DEFAULT_REPLAY_HEADERS` */
  replayHeaders?: readonly string[]
  /**
   * How long a duplicate waits for the first request to finish, then replays it, before
   * 409 (ms). @default the engine's explicit `waitMs`, else 0: 409 with Retry-After at once
   */
  waitMs?: number
  /**
   * How long a route may hold its key (from when it starts), in ms. A route still
   * running then (one that never answers: an Express 4 route whose async error nobody
   * passed to `next`, a query stuck on a lock) is given up on: its transaction is rolled
   * back (or its lease let go), the key freed, the client answered 503 `overran` with
   * Retry-After if nothing was sent yet, and the route named in the event stream and the
   * log (a `route-overran` warning). What the route writes or sends later fails or goes
   * nowhere. @default the engine's explicit `deadlineMs`, else 30 s ({@link DEFAULT_HTTP_DEADLINE_MS})
   */
  deadlineMs?: number
  /** The largest body buffered for the fingerprint; larger bodies get 413. @default 1 MiB */
  maxBodyBytes?: number
  /**
   * The largest response body stored for replays. A larger response is still sent whole
   * and stored, with its status and allow-listed headers but without its body (nor the
   * headers that describe it), so its effect never runs again; its replay has an empty
   * body and `Idempotent-Body-Omitted: true`. So is a body whose headers leave it no room
   * in what the store holds. At most what the store's `maxOutcomeBytes` leaves for a
   * body stored as base64 with its status and headers (`largestStoredBody`): about 12 MiB
   * on the bundled stores, 2.8 MiB on DynamoDB; more is refused at creation.
   * @default 1 MiB, or `largestStoredBody` of the store when that is less
   */
  maxStoredBodyBytes?: number
  /** Called once per protected request with the engine's outcome (only with `store`; an engine has its own). */
  onOutcome?: (event: OutcomeEvent) => void
  /**
   * Where the middleware reports what it answers itself (400, 413, requests let through)
   * and, with `store`, the engine's calls. @default the process-wide `idemEvents`
   */
  events?: EventStream
  /**
   * Where the `type` URIs of idem's problem answers point: a base URI (`#<code>` is
   * appended) or a function of the code, to link your own API docs. @default `urn:idem:problem` (identifiers, documented in docs/problems.md)
   */
  problemTypes?: ProblemTypes
}

/** The options after validation, with every default applied. */
export interface ResolvedOptions<Tx, Native> {
  idem: HttpEngine<Tx>
  scope: (request: Native) => string | Promise<string>
  methods: ReadonlySet<string>
  /** Whether the request, with this path (as sent, without the query), is protected. */
  routes: (request: Native, path: string) => boolean
  required: boolean
  strict: boolean
  ttlMs: number | undefined
  fields: readonly string[] | undefined
  storeStatus: (status: number) => boolean
  replayHeaders: ReadonlySet<string>
  waitMs: number
  deadlineMs: number
  maxBodyBytes: number
  maxStoredBodyBytes: number
  /** What the engine's store holds (`maxOutcomeBytes`): no stored response is larger. */
  maxOutcomeBytes: number
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
 * Validates the options once, at start-up, so that a mistake fails the boot rather
 * than a request.
 * @throws InvalidOptionError naming the option
 */
export function resolveOptions<Tx, Native>(options: IdempotencyOptions<Tx, Native>): ResolvedOptions<Tx, Native> {
  if (options === null || typeof options !== 'object') fail('options', 'must be an object')
  assertKnownOptions('idempotency', options, KNOWN)
  const {
    store,
    idem,
    scope,
    methods = DEFAULT_METHODS,
    routes,
    required = true,
    strict = false,
    ttlMs,
    fields,
    storeStatus = defaultStoreStatus,
    replayHeaders = DEFAULT_REPLAY_HEADERS,
    waitMs: explicitWait,
    deadlineMs,
    maxBodyBytes = DEFAULT_MAX_BODY_BYTES,
    maxStoredBodyBytes: explicitStoredBody,
    onOutcome,
    events = idemEvents,
    problemTypes,
  } = options

  if (scope !== undefined && typeof scope !== 'function') fail('scope', 'must be a function (request) => string')
  if (!isList(methods) || methods.length === 0 || !methods.every((m) => typeof m === 'string' && TOKEN.test(m))) {
    fail('methods', 'must be a non-empty list of HTTP method names')
  }
  if (typeof required !== 'boolean') fail('required', 'must be true or false')
  if (typeof strict !== 'boolean') fail('strict', 'must be true or false')
  if (ttlMs !== undefined) assertDuration('idempotency: option "ttlMs"', ttlMs, 1)
  if (explicitWait !== undefined) assertDuration('idempotency: option "waitMs"', explicitWait, 0)
  if (deadlineMs !== undefined) assertDuration('idempotency: option "deadlineMs"', deadlineMs, 1)
  if (events === null || typeof events !== 'object' || typeof events.emit !== 'function') fail('events', 'must be an event stream (createEventStream())')
  assertCount('idempotency: option "maxBodyBytes"', maxBodyBytes, 0, Number.MAX_SAFE_INTEGER)
  if (explicitStoredBody !== undefined) assertCount('idempotency: option "maxStoredBodyBytes"', explicitStoredBody, 0, Number.MAX_SAFE_INTEGER)
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

  const engine = engineOf(store, idem, onOutcome, events)
  const { maxOutcomeBytes } = engine.store
  const largest = largestStoredBody(maxOutcomeBytes)
  if (explicitStoredBody !== undefined && explicitStoredBody > largest) {
    fail(
      'maxStoredBodyBytes',
      `is ${explicitStoredBody} bytes, but the ${engine.store.name} store holds outcomes of at most ${maxOutcomeBytes} bytes, ` +
        `which leaves room for response bodies of at most ${largest} bytes (stored as base64, with the status and headers): set ${largest} or less`,
    )
  }
  return {
    idem: engine,
    scope: scope ?? sharedScope(events),
    methods: new Set(methods.map((m) => m.toUpperCase())),
    routes: routeMatcher<Native>(routes),
    required,
    strict,
    // The precedence rule: the middleware's own setting, then the engine's explicit one, then HTTP's default.
    ttlMs: ttlMs ?? engine.settings?.ttlMs,
    fields,
    storeStatus,
    replayHeaders: new Set(replayHeaders.map((h) => h.toLowerCase())),
    waitMs: explicitWait ?? engine.settings?.waitMs ?? 0,
    deadlineMs: deadlineMs ?? engine.settings?.deadlineMs ?? DEFAULT_HTTP_DEADLINE_MS,
    maxBodyBytes,
    maxStoredBodyBytes: explicitStoredBody ?? Math.min(DEFAULT_MAX_STORED_BODY_BYTES, largest),
    maxOutcomeBytes,
    problemTypes,
    events,
  }
}

function engineOf<Tx>(
  store: KeyStore<Tx> | undefined,
  idem: HttpEngine<Tx> | undefined,
  onOutcome: IdempotencyOptions<Tx>['onOutcome'],
  events: EventStream,
): HttpEngine<Tx> {
  if (store !== undefined && idem !== undefined) fail('store', 'and "idem" are exclusive: pass the store, or an engine built on it')
  if (idem !== undefined) {
    if (idem === null || typeof idem !== 'object' || typeof idem.run !== 'function') fail('idem', 'must be an engine from createIdem(...) or createLeasedIdem(...)')
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

function sharedScope(events: EventStream): () => string {
  // Loud on purpose: without a scope, two tenants sending the same key share one stored response.
  warn(events, {
    code: 'shared-scope',
    source: 'idempotency',
    message:
      'idem: the idempotency middleware has no "scope" option, so every client shares one key space ' +
      `("${SHARED_SCOPE}") and one client could be answered with another's stored response. ` +
      'Pass scope: (request) => <the authenticated account or API key>.',
  })
  return () => SHARED_SCOPE
}

/**
 * Matches a request against the `routes` list so that it fails closed: a request that
 * any of the frameworks could route to a listed path is protected. Frameworks route
 * differently from the raw path (Express ignores case and a trailing slash, Hono and
 * Fastify decode `%XX` first), so paths and listed routes are both compared in their
 * `routingPath` form, and regular expressions are tried on the raw path and on that form.
 */
function routeMatcher<Native>(routes: IdempotencyOptions<unknown, Native>['routes']): (request: Native, path: string) => boolean {
  if (routes === undefined) return () => true
  if (typeof routes === 'function') return (request) => routes(request)
  if (!isList(routes) || !routes.every((r) => r instanceof RegExp || (typeof r === 'string' && r.startsWith('/')))) {
    fail('routes', 'must be a function (request) => boolean or a list of paths ("/orders", "/orders/*") and regular expressions')
  }
  const exact = new Set<string>()
  const prefixes: string[] = []
  const patterns: RegExp[] = []
  for (const route of routes) {
    if (route instanceof RegExp) patterns.push(new RegExp(route.source, route.flags.replace(/[gy]/g, '')))
    else if (route.endsWith('/*')) {
      const base = routingPath(route.slice(0, -2))
      exact.add(base)
      prefixes.push(base === '/' ? '/' : `${base}/`)
    } else exact.add(routingPath(route))
  }
  return (_request, raw) => {
    const path = routingPath(raw)
    return exact.has(path) || prefixes.some((p) => path.startsWith(p)) || patterns.some((p) => p.test(raw) || p.test(path))
  }
}

/**
 * A path in the form the most lenient router would match it: `%XX` decoded (repeatedly,
 * a few times), lower case, runs of slashes as one, `.` and `..` segments resolved, no
 * trailing slash. Two paths that any supported framework could route to the same
 * handler have the same form; the converse need not hold (that only protects more).
 * @example routingPath('/%6Frders//42/') // → '/orders/42'
 */
export function routingPath(path: string): string {
  let p = path
  for (let round = 0; round < 3 && p.includes('%'); round++) {
    const decoded = decodePercent(p)
    if (decoded === p) break
    p = decoded
  }
  p = p.toLowerCase().replace(/\\/g, '/')
  if (p.includes('//')) p = p.replace(/\/{2,}/g, '/')
  if (p.includes('/.')) p = withoutDotSegments(p)
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1)
  return p.startsWith('/') ? p : `/${p}`
}

// Each run of escapes on its own, so one malformed escape leaves the others decoded;
// a run that is not UTF-8 keeps its ASCII escapes decoded only.
function decodePercent(path: string): string {
  return path.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run)
    } catch {
      return run.replace(/%([0-7][0-9a-fA-F])/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    }
  })
}

function withoutDotSegments(path: string): string {
  const out: string[] = []
  for (const segment of path.split('/')) {
    if (segment === '.' || segment === '') continue
    if (segment === '..') out.pop()
    else out.push(segment)
  }
  return `/${out.join('/')}${path.endsWith('/') || path.endsWith('/.') || path.endsWith('/..') ? '/' : ''}`
}

function isList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value)
}

function fail(name: string, problem: string): never {
  throw new InvalidOptionError(`idempotency: option "${name}" ${problem}`)
}
