/**
 * The codes of the errors idem throws on purpose, as this interface's keys (each value is
 * `true`): the core's own here; a front end adds the codes only it throws by declaration
 * merging beside the error that carries each (as `idem/fetch` does), so the core names
 * none of them. What each means over HTTP (status, title, problem type) is the
 * HTTP front end's business (`idem/fetch`, problem.ts), not the core's.
 */
export interface IdemErrorCodes {
  'missing-key': true
  'invalid-key': true
  'fingerprint-mismatch': true
  'in-flight': true
  'store-unavailable': true
  'migration-required': true
  'outcome-not-serializable': true
  'outcome-unreadable': true
  'outcome-too-large': true
  'invalid-option': true
  'lease-lost': true
  overran: true
}

/**
 * Every error idem throws on purpose has one of these codes. They are stable: callers,
 * clients and dashboards may switch on them.
 */
export type IdemErrorCode = keyof IdemErrorCodes

/** What an idem error may carry besides its message. */
export interface IdemErrorOptions {
  cause?: unknown
  /** Seconds a client should wait before retrying (in flight, store unavailable). */
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
