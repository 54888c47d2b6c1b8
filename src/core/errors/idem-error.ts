/**
 * Every error idem throws on purpose has one of these codes. They are stable: callers,
 * clients and dashboards may switch on them. What each means over HTTP (status, title,
 * problem type) is the HTTP front end's business (`idem/fetch`, problem.ts), not the
 * core's.
 */
export type IdemErrorCode =
  | 'missing-key'
  | 'invalid-key'
  | 'fingerprint-mismatch'
  | 'in-flight'
  | 'store-unavailable'
  | 'migration-required'
  | 'outcome-not-serializable'
  | 'outcome-unreadable'
  | 'outcome-too-large'
  | 'invalid-option'
  | 'body-too-large'
  | 'lease-lost'
  | 'overran'

/** What an idem error may carry besides its message. */
export interface IdemErrorOptions {
  cause?: unknown
  /** Seconds a client should wait before retrying (409 and 503). */
  retryAfterSeconds?: number
}

/**
 * Base class of every error idem throws on purpose: a stable `code`, a message for
 * logs, and, when retrying later is the way out, how long to wait.
 */
export abstract class IdemError extends Error {
  abstract readonly code: IdemErrorCode
  /** Seconds a caller should wait before retrying (in flight, store unavailable), when known. */
  readonly retryAfterSeconds: number | undefined

  constructor(message: string, options: IdemErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.retryAfterSeconds = options.retryAfterSeconds
  }
}
