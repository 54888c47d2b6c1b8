import { backoffDelay, type Backoff } from '../core/backoff.js'
import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertCount, assertDuration, assertKnownOptions, optionNames, shown } from '../core/errors/option-checks.js'
import { IN_FLIGHT_PROBLEM_TYPES } from './retryable.js'

/** Why an attempt is being retried. */
export type RetryReason = 'network' | 'timeout' | 'status'

/** Passed to `onRetry` before each backoff sleep. */
export interface RetryEvent {
  key: string
  /** The attempt that just failed, counting from 1. */
  attempt: number
  reason: RetryReason
  /** The retryable status, when `reason` is `'status'`. */
  status?: number
  /** The network failure or timeout, when `reason` is not `'status'`. */
  error?: unknown
  /** How long the client will wait before the next attempt. */
  delayMs: number
  /** True when the wait came from the server's `Retry-After`, false when from backoff. */
  retryAfter: boolean
}

/** The `fetch` the client sends attempts with: anything taking a `Request`. */
export type FetchFunction = (request: Request) => Promise<Response>

/** Options of `createClient`; every field is optional. */
export interface ClientOptions {
  /** Attempts per call, the first included. @default 5 */
  maxAttempts?: number
  /**
   * The wait between attempts: exponential with full jitter from `baseMs`, doubling per
   * attempt up to `maxMs` (a server's `Retry-After` may ask for longer), or a function of
   * the attempt that failed. @default { baseMs: 100, maxMs: 10_000 }
   */
  backoff?: Backoff
  /** How long one attempt may take, response body included. @default 10_000 */
  attemptTimeoutMs?: number
  /** How long a whole call may take, attempts and waits included. @default 30_000 */
  deadlineMs?: number
  /** Returns a number in [0, 1) for the jitter; inject a seeded one in tests. @default Math.random */
  random?: () => number
  /** Sends one attempt. @default globalThis.fetch */
  fetch?: FetchFunction
  /** Called before each backoff sleep, for logs and metrics. A throwing hook is ignored. */
  onRetry?: (event: RetryEvent) => void
  /**
   * Problem `type` URIs that mark a 409 as "the first request with this key is still
   * running", so the client waits and asks again. idem's own in-flight 409s are known by
   * their `code` member whatever the server's `problemTypes`; list a type here for a
   * server that is not idem. Every other 409 is final. @default IN_FLIGHT_PROBLEM_TYPES
   */
  inFlightTypes?: readonly string[]
}

/** `ClientOptions` with every default filled in and checked; the backoff made into the wait after each attempt. */
export type ResolvedClientOptions = Required<Omit<ClientOptions, 'onRetry' | 'backoff' | 'inFlightTypes'>> &
  Pick<ClientOptions, 'onRetry'> & { delayAfter: (attempt: number) => number; inFlightTypes: ReadonlySet<string> }

/** The client's backoff unless `backoff` says otherwise: 100 ms, doubling up to 10 s. */
export const CLIENT_BACKOFF = { baseMs: 100, maxMs: 10_000 } as const

/**
 * Fills in defaults and checks every option, so a mistake fails at start-up and names
 * the option instead of surfacing as odd retry behaviour under load.
 * @throws InvalidOptionError naming the option
 */
export function resolveClientOptions(options: ClientOptions = {}): ResolvedClientOptions {
  if (options === null || typeof options !== 'object') fail('options', 'an object', options)
  assertKnownOptions('createClient', options, KNOWN_OPTIONS)
  return resolved(options)
}

const KNOWN_OPTIONS = optionNames<ClientOptions>({
  maxAttempts: true, backoff: true, attemptTimeoutMs: true, deadlineMs: true, random: true, fetch: true, onRetry: true, inFlightTypes: true,
})

function resolved({
  maxAttempts = 5,
  backoff,
  attemptTimeoutMs = 10_000,
  deadlineMs = 30_000,
  random = Math.random,
  fetch = globalThis.fetch,
  onRetry,
  inFlightTypes = IN_FLIGHT_PROBLEM_TYPES,
}: ClientOptions): ResolvedClientOptions {
  assertCount('createClient: option "maxAttempts"', maxAttempts, 1, 1_000)
  assertDuration('createClient: option "attemptTimeoutMs"', attemptTimeoutMs, 1)
  assertDuration('createClient: option "deadlineMs"', deadlineMs, 1)
  if (typeof random !== 'function') fail('random', 'a function returning a number in [0, 1)', random)
  if (typeof fetch !== 'function') fail('fetch', 'a fetch function (no global fetch was found)', fetch)
  if (onRetry !== undefined && typeof onRetry !== 'function') fail('onRetry', 'a function', onRetry)
  if (!Array.isArray(inFlightTypes) || !inFlightTypes.every((type) => typeof type === 'string' && type.length > 0)) {
    fail('inFlightTypes', 'an array of problem type URIs (non-empty strings)', inFlightTypes)
  }
  const delayAfter = backoffDelay(backoff, 'createClient', { defaults: CLIENT_BACKOFF, random })
  return { maxAttempts, attemptTimeoutMs, deadlineMs, random, fetch, onRetry, delayAfter, inFlightTypes: new Set(inFlightTypes) }
}

function fail(option: string, expected: string, got: unknown): never {
  throw new InvalidOptionError(`createClient: option "${option}" must be ${expected}, got ${shown(got)}`)
}
