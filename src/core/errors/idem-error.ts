/**
 * Every outcome idem reports is one of these codes. They are stable: clients and
 * dashboards may switch on them, and each maps to one problem `type` URI.
 */
export type IdemErrorCode =
  | 'missing-key'
  | 'invalid-key'
  | 'fingerprint-mismatch'
  | 'in-flight'
  | 'store-unavailable'
  | 'migration-required'
  | 'outcome-not-serializable'
  | 'invalid-option'
  | 'body-too-large'
  | 'lease-lost'

/** Where the problem types are documented; `type` URIs are this plus `#<code>`. */
export const PROBLEM_TYPE_BASE = 'https://github.com/idem-js/idem/blob/main/docs/problems.md'

export interface IdemErrorOptions {
  cause?: unknown
  /** Seconds a client should wait before retrying (409 and 503). */
  retryAfterSeconds?: number
}

/**
 * Base class of every error idem throws on purpose. `status` is the HTTP status the
 * HTTP front end answers with, so the mapping lives in one place.
 */
export abstract class IdemError extends Error {
  abstract readonly code: IdemErrorCode
  abstract readonly status: number
  /** A short, stable summary of the problem type (RFC 9457 `title`). */
  abstract readonly title: string
  readonly retryAfterSeconds: number | undefined

  constructor(message: string, options: IdemErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.retryAfterSeconds = options.retryAfterSeconds
  }

  /** The RFC 9457 `type` URI for this problem. */
  get type(): string {
    return `${PROBLEM_TYPE_BASE}#${this.code}`
  }
}
