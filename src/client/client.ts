import { InvalidOptionError } from '../core/errors/invalid-option.js'
import { assertValidKey } from '../core/identity.js'
import { assertKnownOptions, optionNames } from '../core/errors/option-checks.js'
import { abortable, linkSignal, sleep } from './abort.js'
import { DeadlineExceededError } from './errors/deadline-exceeded.js'
import { ProblemError } from './errors/problem-error.js'
import { RetriesExhaustedError } from './errors/retries-exhausted.js'
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey, serializeKeyHeader } from '../headers/idempotency-key.js'
import { NO_BODY_STATUSES } from '../headers/no-body-statuses.js'
import { isReplayed, mintKey } from './key.js'
import { resolveClientOptions, type ClientOptions, type FetchFunction, type RetryReason } from './options.js'
import { readProblem } from './problem.js'
import { parseRetryAfter } from './retry-after.js'
import { isRetryable } from './retryable.js'
import { attemptRequest, prepareRequest, type PreparedRequest } from './request.js'
import type { IdemClientError } from './errors/client-error.js'

/** Per-call options: the third argument of `client.fetch`. */
export interface FetchCallOptions {
  /**
   * The idempotency key for this intent, when the caller already has one (a key kept
   * with queued work, or `keyFromIntent(...)`). An `Idempotency-Key` header already on
   * the request counts too. Otherwise a UUIDv7 is minted before the first attempt.
   */
  key?: string
}

/** A successful call: the final answer and how it was reached. */
export interface FetchResult {
  /** The final 1xx–3xx response. Its body was read during the attempt and is buffered, so reading it cannot fail half-way. */
  response: Response
  /** The key sent on every attempt. Keep it to retry the same intent later. */
  key: string
  /** How many attempts were sent, the successful one included. */
  attempts: number
  /** True when the server returned a stored outcome (`Idempotent-Replayed: true`): the effect happened on an earlier attempt. */
  replayed: boolean
}

/** What `createClient` returns. */
export interface IdemClient {
  /**
   * `fetch`, made safe to retry: one key per call, on every attempt. Resolves with the
   * first 1xx–3xx answer; throws `ProblemError` for a 4xx/5xx final answer,
   * `RetriesExhaustedError` or `DeadlineExceededError` when no answer came, the
   * caller's `signal.reason` when aborted, and `InvalidKeyError` / `InvalidOptionError`
   * / `TypeError` for a malformed call before anything is sent.
   */
  fetch(input: string | URL | Request, init?: RequestInit, call?: FetchCallOptions): Promise<FetchResult>
}

type AttemptOutcome =
  | { kind: 'response'; response: Response; body: Uint8Array }
  | { kind: 'failure'; error: unknown; timedOut: boolean }

const CALL_OPTIONS = optionNames<FetchCallOptions>({ key: true })

/**
 * Creates a client that cannot make the most common idempotency bug, a new key per
 * attempt: the key is minted once per call (or taken from the caller) and sent as
 * `Idempotency-Key: "<key>"` on every attempt. Network errors, per-attempt timeouts,
 * 408/425/429/502/503/504 and idem's in-flight 409 are retried with exponential backoff
 * and full jitter, or after the server's `Retry-After`. A replay (`Idempotent-Replayed:
 * true`) is final whatever its status, and so is every other answer: a 4xx or 5xx one
 * is thrown at once as a `ProblemError`.
 *
 * Options are checked here, once; see `ClientOptions` for defaults.
 *
 * @throws InvalidOptionError naming the option
 * @see docs/client.md
 * @example
 * import { createClient, ProblemError } from 'idem/client'
 *
 * const client = createClient({ maxAttempts: 5, deadlineMs: 20_000 })
 * const { response, attempts, replayed, key } = await client.fetch('https://api.example/orders', {
 *   method: 'POST',
 *   headers: { 'content-type': 'application/json' },
 *   body: JSON.stringify({ sku: 'A-1', quantity: 2 }),
 * })
 * const order = await response.json() // the original 201 body, even if an earlier response was lost
 */
export function createClient(options: ClientOptions = {}): IdemClient {
  const { maxAttempts, delayAfter, attemptTimeoutMs, deadlineMs, fetch: send, onRetry, inFlightTypes } = resolveClientOptions(options)

  async function idempotentFetch(input: string | URL | Request, init?: RequestInit, call: FetchCallOptions = {}): Promise<FetchResult> {
    assertKnownOptions('fetch', call, CALL_OPTIONS)
    // A monotonic clock: a wall-clock jump (NTP) must not stretch or cut the deadline.
    const deadlineAt = performance.now() + deadlineMs
    const prepared = await prepareRequest(input, init)
    // Decided once, before the first attempt: every retry below reuses it.
    const key = chooseKey(call.key, prepared.headers)
    prepared.headers.set(IDEMPOTENCY_KEY_HEADER, serializeKeyHeader(key))

    for (let attempt = 1; ; attempt++) {
      const remaining = deadlineAt - performance.now()
      if (remaining <= 0) throw new DeadlineExceededError(`No answer within the ${deadlineMs} ms deadline`, { key, attempts: attempt - 1 })
      // The last attempt is cut short by the deadline rather than outliving it.
      const outcome = await runAttempt(send, prepared, Math.min(attemptTimeoutMs, remaining))

      let retryAfterMs: number | undefined
      if (outcome.kind === 'response') {
        if (!isRetryable(outcome.response, outcome.body, inFlightTypes)) return settle(outcome, key, attempt, false)
        retryAfterMs = parseRetryAfter(outcome.response.headers.get('retry-after'), Date.now())
      }
      if (attempt >= maxAttempts) throw giveUp(outcome, key, attempt, 'attempts', `all ${maxAttempts} attempts failed`)
      const delayMs = retryAfterMs ?? delayAfter(attempt)
      // Waiting past the deadline only to give up there helps nobody: stop now with the
      // answer we have. A Retry-After longer than the time left lands here too.
      if (performance.now() + delayMs >= deadlineAt) {
        throw giveUp(outcome, key, attempt, 'deadline', `the next attempt could not start within the ${deadlineMs} ms deadline`)
      }

      if (onRetry) {
        const reason: RetryReason = outcome.kind === 'response' ? 'status' : outcome.timedOut ? 'timeout' : 'network'
        try {
          onRetry({
            key,
            attempt,
            reason,
            delayMs,
            retryAfter: retryAfterMs !== undefined,
            ...(outcome.kind === 'response' ? { status: outcome.response.status } : { error: outcome.error }),
          })
        } catch {
          // A logging hook must not change what the call does.
        }
      }
      await sleep(delayMs, prepared.signal)
    }
  }

  return { fetch: idempotentFetch }
}

function chooseKey(callKey: string | undefined, headers: Headers): string {
  const sent = headers.get(IDEMPOTENCY_KEY_HEADER)
  const fromHeader = sent === null ? undefined : parseIdempotencyKey(sent)
  if (callKey === undefined) return fromHeader ?? mintKey()
  assertValidKey(callKey)
  if (fromHeader !== undefined && fromHeader !== callKey) {
    throw new InvalidOptionError('fetch: option "key" differs from the Idempotency-Key header already on the request; give only one of them')
  }
  return callKey
}

/**
 * Sends one attempt and reads its whole body under the attempt's timeout. Reading the
 * body here means a connection dropped mid-body is retried like any lost response,
 * instead of surfacing later from `response.json()` where no retry can help.
 * Throws only when the caller aborted; every other failure is an outcome.
 */
async function runAttempt(send: FetchFunction, prepared: PreparedRequest, timeoutMs: number): Promise<AttemptOutcome> {
  const controller = new AbortController()
  const unlink = linkSignal(prepared.signal, controller)
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort(new DOMException(`The attempt timed out after ${Math.round(timeoutMs)} ms`, 'TimeoutError'))
  }, timeoutMs)
  try {
    // `abortable` makes the cancel immediate even with a custom fetch that ignores signals.
    const response = await abortable(send(attemptRequest(prepared, controller.signal)), controller.signal)
    const body = new Uint8Array(await abortable(response.arrayBuffer(), controller.signal))
    return { kind: 'response', response, body }
  } catch (error) {
    if (prepared.signal?.aborted) throw prepared.signal.reason
    return { kind: 'failure', error: timedOut ? controller.signal.reason : error, timedOut }
  } finally {
    clearTimeout(timer)
    unlink()
  }
}

function settle(outcome: Extract<AttemptOutcome, { kind: 'response' }>, key: string, attempts: number, retryable: boolean): FetchResult {
  const { response, body } = outcome
  const replayed = isReplayed(response.headers)
  if (response.status >= 400) throw problemError(outcome, key, attempts, retryable, replayed)
  const buffered = new Response(NO_BODY_STATUSES.has(response.status) ? null : body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
  // A constructed Response has an empty `url` and `redirected: false`; keep the real
  // ones so code that looks at where a redirect landed still works.
  Object.defineProperties(buffered, { url: { value: response.url }, redirected: { value: response.redirected } })
  return { response: buffered, key, attempts, replayed }
}

function giveUp(outcome: AttemptOutcome, key: string, attempts: number, limit: 'attempts' | 'deadline', why: string): IdemClientError {
  if (outcome.kind === 'response') return problemError(outcome, key, attempts, true, isReplayed(outcome.response.headers))
  const Failure = limit === 'deadline' ? DeadlineExceededError : RetriesExhaustedError
  const what = outcome.timedOut ? 'timed out' : `failed (${describe(outcome.error)})`
  return new Failure(`The last attempt ${what}, and ${why}`, { key, attempts, cause: outcome.error })
}

function problemError(
  { response, body }: Extract<AttemptOutcome, { kind: 'response' }>,
  key: string,
  attempts: number,
  retryable: boolean,
  replayed: boolean,
): ProblemError {
  const { problem, text } = readProblem(body, response.headers)
  return new ProblemError({ status: response.status, headers: response.headers, problem, body: text, key, attempts, retryable, replayed })
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  // undici reports "fetch failed" and puts the useful part (ECONNRESET, "other side closed") in `cause`.
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ''
  return `${error.message}${cause}`
}
