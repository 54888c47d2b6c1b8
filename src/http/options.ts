/**
 * The options of the HTTP middleware, their defaults, and what a route and the
 * middleware get of them; resolved-options.ts checks them once and resolves them.
 */
import type { CallOptions, CHECKED_RUN, CheckedRun, RunResult } from '../core/call.js'
import type { EngineSettings, OutcomeEvent } from '../core/engine.js'
import type { EventStream } from '../core/events.js'
import type { Discarded } from '../core/result.js'
import type { KeyStore } from '../ports/key-store.js'
import type { ProblemTypes } from './problem.js'

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

/** The scope used when no `scope` function is given: every caller shares one key space. */
export const SHARED_SCOPE = 'shared'

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
 * What the middleware needs of an engine: an engine from `createIdem` or
 * `createLeasedIdem`, whose checked run it calls. With the transactional engine (`createIdem`) `Tx` is the open transaction; with the leased
 * engine (`createLeasedIdem`, e.g. on Redis) it is the step context (`step`, `derive`).
 */
export interface HttpEngine<Tx> {
  /** Runs `fn` at most once per `(scope, key)` and returns its stored outcome (see `Idem.run`, `LeasedIdem.run`). */
  run<T>(options: CallOptions, fn: (tx: Tx) => T | Discarded<T> | Promise<T | Discarded<T>>): Promise<RunResult<T>>
  /** What the engine was given explicitly; the middleware keeps it where it sets nothing itself. */
  readonly settings?: EngineSettings
  /** Where the engine keeps outcomes: the middleware fits the responses it stores to what it holds (`maxOutcomeBytes`). */
  readonly store: { readonly name: string; readonly maxOutcomeBytes: number }
  /** The checked run the middleware calls (both engines have it: see `CheckedRun`). Internal to idem's front ends. @internal */
  readonly [CHECKED_RUN]: CheckedRun<Tx>
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
