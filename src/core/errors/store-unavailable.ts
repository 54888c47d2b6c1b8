import { IdemError, type IdemErrorOptions } from './idem-error.js'

/**
 * The key store could not be reached or did not answer in time. Nothing was run, so the
 * request is safe to retry after `retryAfterSeconds`; idem never runs a request
 * unprotected because its store is down.
 */
export class StoreUnavailableError extends IdemError {
  override readonly name = 'StoreUnavailableError'
  readonly code = 'store-unavailable' as const

  constructor(message: string, options: IdemErrorOptions = {}) {
    super(message, { retryAfterSeconds: 1, ...options })
  }
}
