import { IdemError, type IdemErrorOptions } from './idem-error.js'

/**
 * Another request with the same key is still running (or holds the key's lock longer
 * than this caller was willing to wait). Nothing was run; retry after `retryAfterSeconds`.
 */
export class InFlightError extends IdemError {
  override readonly name = 'InFlightError'
  readonly code = 'in-flight' as const

  constructor(message: string, options: IdemErrorOptions = {}) {
    super(message, { retryAfterSeconds: 1, ...options })
  }
}
