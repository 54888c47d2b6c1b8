/** What every error the client throws on purpose carries, whatever went wrong. */
export interface ClientErrorDetails {
  /** The idempotency key the call used on every attempt: retry later with the same one. */
  key: string
  /** How many attempts were sent. */
  attempts: number
  cause?: unknown
}

/**
 * Base class of the errors `createClient().fetch` throws. `key` is on every one of
 * them because the way out of most failures is "try again later with this key": the
 * server then replays the first outcome if there was one.
 */
export abstract class IdemClientError extends Error {
  readonly key: string
  readonly attempts: number

  constructor(message: string, { key, attempts, cause }: ClientErrorDetails) {
    super(message, cause === undefined ? undefined : { cause })
    this.key = key
    this.attempts = attempts
  }
}
